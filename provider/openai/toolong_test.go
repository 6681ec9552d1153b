package openai

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

// The error bodies of the refusals as too long, as each server sends them.
const (
	openAIMessages  = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	openAIRequested = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	openAINoCounts  = `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`
	vLLM            = `{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 8192 output tokens and your prompt contains at least 124000 input tokens, for a total of at least 132192 tokens. Please reduce the length of the input prompt or the number of requested output tokens.","type":"BadRequestError","param":null,"code":400}}`
	vLLMTopLevel    = `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`
	openRouter      = `{"error":{"message":"This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400}}`
	llamaCpp        = `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}`
)

// errorObject is what the SDK hands tooLong: the body's "error", or the
// whole body when it has none.
func errorObject(body string) string {
	if i := strings.Index(body, `{"error":`); i == 0 {
		return body[len(`{"error":`) : len(body)-1]
	}
	return body
}

func TestTooLongReadsEachServersRefusalAndNothingElse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   *provider.TooLongError // nil: not a refusal as too long
	}{
		{"openai, messages", 400, openAIMessages, &provider.TooLongError{Tokens: 130412, Limit: 128000}},
		{"openai, requested", 400, openAIRequested, &provider.TooLongError{Tokens: 8000, Output: 1000, Limit: 8192}},
		{"openai, no counts", 400, openAINoCounts, &provider.TooLongError{}},
		{"vllm", 400, vLLM, &provider.TooLongError{Tokens: 124000, Output: 8192, Limit: 131072}},
		{"vllm, top level", 400, vLLMTopLevel, &provider.TooLongError{Tokens: 4000, Output: 1000, Limit: 4096}},
		{"openrouter", 400, openRouter, &provider.TooLongError{Limit: 32768}},
		{"llama.cpp", 400, llamaCpp, &provider.TooLongError{Tokens: 14429, Limit: 8192}},
		{"llama.cpp, as a 500", 500, llamaCpp, &provider.TooLongError{Tokens: 14429, Limit: 8192}},
		{"the code alone", 400, `{"code":"context_length_exceeded","message":"","type":"invalid_request_error"}`, &provider.TooLongError{}},
		// other refusals
		{"model not found", 400, `{"message":"model not found: gpt-x","type":"invalid_request_error","code":"model_not_found"}`, nil},
		{"max tokens", 400, `{"message":"max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}`, nil},
		{"no code", 400, `{"message":"Bad Request","type":"invalid_request_error"}`, nil},
		{"not JSON", 400, `Bad Request`, nil},
		{"empty", 400, ``, nil},
		{"a 429 that names the window", 429, errorObject(openAIMessages), nil},
		{"a 500 that names the window", 500, errorObject(openAIMessages), nil},
	} {
		got := tooLong(tc.status, errorObject(tc.body))
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: tooLong = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// serve answers every request with status and body, counting them.
func serve(t *testing.T, status int, body string) (*httptest.Server, *int) {
	n := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*n++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func TestARefusalAsTooLongIsATooLongErrorWrappingTheSDKsAndIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		body                  string
		tokens, output, limit int
	}{
		{"openai", openAIMessages, 130412, 0, 128000},
		{"openai, no counts", openAINoCounts, 0, 0, 0},
		{"vllm", vLLM, 124000, 8192, 131072},
		{"vllm, top level", vLLMTopLevel, 4000, 1000, 4096},
		{"llama.cpp", llamaCpp, 14429, 0, 8192},
	} {
		for _, noStream := range []bool{false, true} {
			srv, n := serve(t, 400, tc.body)
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: noStream, MaxRetries: 3})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), sampleRequest(), nil)
			tl, ok := provider.IsTooLong(err)
			if !ok {
				t.Fatalf("%s (noStream %v): err = %v, not a TooLongError", tc.name, noStream, err)
			}
			if tl.Tokens != tc.tokens || tl.Output != tc.output || tl.Limit != tc.limit {
				t.Errorf("%s: %+v", tc.name, tl)
			}
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
				t.Errorf("%s: the error answer's *Error is not wrapped: %v", tc.name, err)
			}
			if !strings.Contains(err.Error(), "openai: 400 Bad Request: {") {
				t.Errorf("%s: the provider's message is lost: %v", tc.name, err)
			}
			if *n != 1 {
				t.Errorf("%s: %d requests; a refusal as too long is not retried", tc.name, *n)
			}
		}
	}
}

// The scripted fake's error bodies have no code: its refusal is read from
// the message, as from vLLM or OpenRouter.
func TestTheFakesRefusalIsReadFromItsMessage(t *testing.T) {
	srv := providertest.NewOpenAI(t,
		providertest.Step{Status: 400, ErrorMessage: "This model's maximum context length is 40000 tokens. However, your messages resulted in 41250 tokens. Please reduce the length of the messages."},
		providertest.Step{Text: "a retry was made"})
	_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if tl, ok := provider.IsTooLong(err); !ok || tl.Tokens != 41250 || tl.Limit != 40000 {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestOtherFourHundredsAreNotTooLong(t *testing.T) {
	srv := providertest.NewOpenAI(t, providertest.Step{Status: 400, ErrorMessage: "model not found: gpt-x"})
	_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if tl, ok := provider.IsTooLong(err); ok || err == nil {
		t.Fatalf("err = %v (%+v)", err, tl)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "model not found: gpt-x") {
		t.Fatalf("err = %v", err)
	}
}

// vLLM before 0.10 sent its error at the top of the body, which the SDK
// does not read: its message is kept all the same.
func TestAnErrorAtTheTopOfTheBodyKeepsItsMessage(t *testing.T) {
	srv, _ := serve(t, 400, `{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'model')}]","type":"BadRequestError","param":null,"code":400}`)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), sampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "'missing'") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := provider.IsTooLong(err); ok {
		t.Fatalf("read as too long: %v", err)
	}
}
