package anthropic

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestTooLongReadsTheAPIsRefusalsAndNothingElse(t *testing.T) {
	for _, tc := range []struct {
		status  int
		message string
		want    *provider.TooLongError // nil: not a refusal as too long
	}{
		{400, "prompt is too long: 208310 tokens > 200000 maximum", &provider.TooLongError{Tokens: 208310, Limit: 200000}},
		{400, "prompt is too long: 200000 tokens > 199999 maximum", &provider.TooLongError{Tokens: 200000, Limit: 199999}},
		{400, "Prompt is too long", &provider.TooLongError{}},
		{400, "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again",
			&provider.TooLongError{Tokens: 199759, Output: 8192, Limit: 200000}},
		{400, "input length and max_tokens exceed context limit: 90402 + 116650 > 204648, decrease input length or max_tokens and try again",
			&provider.TooLongError{Tokens: 90402, Output: 116650, Limit: 204648}},
		{413, "Request exceeds the maximum allowed number of bytes.", &provider.TooLongError{}},
		{413, "", &provider.TooLongError{}},
		// other refusals: clearing results would not help them
		{400, "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929", nil},
		{400, "messages: text content blocks must be non-empty", nil},
		{400, "messages.1.content.0.tool_result: tool_use_id not found", nil},
		{400, "", nil},
		{429, "prompt is too long: 208310 tokens > 200000 maximum", nil},
		{500, "prompt is too long: 208310 tokens > 200000 maximum", nil},
		{401, "invalid x-api-key", nil},
	} {
		got := tooLong(tc.status, tc.message)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("tooLong(%d, %q) = %+v, want %+v", tc.status, tc.message, got, tc.want)
		}
	}
}

func TestARefusalAsTooLongIsATooLongErrorWrappingTheSDKsAndIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		step                  providertest.Step
		tokens, output, limit int
	}{
		{providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"}, 208310, 0, 200000},
		{providertest.Step{Status: 400, ErrorMessage: "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again"}, 199759, 8192, 200000},
		{providertest.Step{Status: 413, ErrorMessage: "Request exceeds the maximum allowed number of bytes."}, 0, 0, 0},
	} {
		for _, noStream := range []bool{false, true} {
			srv := providertest.NewAnthropic(t, tc.step, providertest.Step{Text: "a retry was made"})
			_, err := newProvider(t, srv, noStream).Complete(context.Background(), providertest.SampleRequest(), nil)
			tl, ok := provider.IsTooLong(err)
			if !ok {
				t.Fatalf("%d %q (noStream %v): err = %v, not a TooLongError", tc.step.Status, tc.step.ErrorMessage, noStream, err)
			}
			if tl.Tokens != tc.tokens || tl.Output != tc.output || tl.Limit != tc.limit {
				t.Errorf("%q: %+v", tc.step.ErrorMessage, tl)
			}
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.step.Status || apiErr.Message != tc.step.ErrorMessage {
				t.Errorf("%q: the SDK's error is not wrapped: %v", tc.step.ErrorMessage, err)
			}
			if !strings.Contains(err.Error(), strings.Fields(tc.step.ErrorMessage)[0]) {
				t.Errorf("the provider's message is lost: %v", err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%q: %d requests; a refusal as too long is not retried", tc.step.ErrorMessage, n)
			}
		}
	}
}

// Cloudflare answers a body over 32 MB itself, before the API: its 413
// need not be JSON.
func TestA413ThatIsNotJSONIsStillTooLong(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		w.Write([]byte("<html><body><h1>413 Request Entity Too Large</h1></body></html>"))
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if tl, ok := provider.IsTooLong(err); !ok || tl.Tokens != 0 || tl.Limit != 0 {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "413") || requests != 1 {
		t.Fatalf("err = %v after %d requests", err, requests)
	}
}

func TestOtherFourHundredsAreNotTooLong(t *testing.T) {
	for _, msg := range []string{
		"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
		"messages: text content blocks must be non-empty",
	} {
		srv := providertest.NewAnthropic(t, providertest.Step{Status: 400, ErrorMessage: msg})
		_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
			t.Fatalf("err = %v", err)
		}
		if tl, ok := provider.IsTooLong(err); ok {
			t.Errorf("%q is read as too long: %+v", msg, tl)
		}
		var apiErr *Error
		if !errors.As(err, &apiErr) || apiErr.Message != msg {
			t.Errorf("the SDK's error is not wrapped: %v", err)
		}
	}
}
