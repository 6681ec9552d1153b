package anthropic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A whole answer (NoStream) is read only when its media type is JSON's, as
// the SDK read it: another is refused in the SDK's words, naming it.
func TestAWholeAnswerIsReadOnlyWhenItsMediaTypeIsJSON(t *testing.T) {
	const message = `{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
	for _, tc := range []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"application/problem+json", true},
		{"text/plain", false},
		{"", false},
		{"application/json;;", true}, // a bad parameter: mime still gives the media type, which the SDK read
		{"applic ation/json", false}, // no media type at all
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tc.contentType}
				_, _ = w.Write([]byte(message))
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			if tc.ok {
				if err != nil || len(resp.Message.Parts) != 1 || resp.Message.Parts[0].Text != "hi" {
					t.Fatalf("Complete: %+v, %v", resp.Message.Parts, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "for responses with content-type '"+tc.contentType+"' that is not 'application/json'") {
				t.Fatalf("Complete: %v, want the SDK's refusal of a %q answer", err, tc.contentType)
			}
		})
	}
}

// A whole answer's refusal says why its retries ended
// (provider.RetriesEnded: the agent's resend then waits the retry-after
// the answer asked for), as a streamed one's does, with RetryFor 0 and
// set: through the SDK it said nothing of it.
func TestAWholeAnswersRefusalSaysWhyTheRetriesEnded(t *testing.T) {
	providertest.CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded(t, "anthropic", providertest.SampleRequest(), func(baseURL string, retryFor time.Duration) (provider.Provider, error) {
		return New(Config{APIKey: "k", BaseURL: baseURL, NoStream: true, MaxRetries: -1, RetryFor: retryFor})
	})
}

// The same on a platform, whose whole answers went through the SDK too.
func TestAWholeAnswersRefusalOnAPlatformSaysWhyTheRetriesEnded(t *testing.T) {
	providertest.CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded(t, "gw: anthropic", providertest.SampleRequest(), func(baseURL string, retryFor time.Duration) (provider.Provider, error) {
		return NewOn(Platform{Name: "gw", BaseURL: baseURL, Authorize: func(*http.Request) error { return nil }},
			Config{NoStream: true, MaxRetries: -1, RetryFor: retryFor})
	})
}
