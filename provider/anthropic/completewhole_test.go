package anthropic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
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

// A whole answer whose body breaks off after its headers is sent again as
// the SDK sent it again (its dropped body retried, unless x-should-retry
// says not to), and one that always breaks off ends in the SDK's error
// after as many attempts: the answer is read inside the retries.
func TestAWholeAnswerCutShortIsSentAgainAsTheSDKSentIt(t *testing.T) {
	const message = `{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
	for _, tc := range []struct {
		name      string
		drops     int32 // the first answers that break off
		noRetry   bool  // they say x-should-retry: false
		wantParts int
	}{
		{name: "once", drops: 1, wantParts: 1},
		{name: "always", drops: 100},
		{name: "told not to retry", drops: 1, noRetry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve := func(n *atomic.Int32) *httptest.Server {
				return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) <= tc.drops {
						// the headers and 20 bytes of the body, then the connection drops
						conn, buf, _ := w.(http.Hijacker).Hijack()
						head := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nretry-after-ms: 0\r\n"
						if tc.noRetry {
							head += "x-should-retry: false\r\n"
						}
						_, _ = buf.WriteString(head + "\r\n" + message[:20])
						_ = buf.Flush()
						_ = conn.Close()
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(message))
				}))
			}
			var sdkN atomic.Int32
			sdkSrv := serve(&sdkN)
			defer sdkSrv.Close()
			client := sdkClient(t, Config{APIKey: "k", BaseURL: sdkSrv.URL, MaxRetries: 2})
			_, sdkErr := client.Messages.New(context.Background(), sdk.MessageNewParams{}, option.WithRequestBody("application/json", []byte(`{}`)))

			var ourN atomic.Int32
			srv := serve(&ourN)
			defer srv.Close()
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: 2})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			if ourN.Load() != sdkN.Load() || len(resp.Message.Parts) != tc.wantParts || (err == nil) != (sdkErr == nil) {
				t.Fatalf("the wire: %d requests, %d parts, err %v; the SDK: %d requests, err %v", ourN.Load(), len(resp.Message.Parts), err, sdkN.Load(), sdkErr)
			}
			if err != nil && !strings.HasSuffix(err.Error(), sdkErr.Error()) {
				t.Fatalf("error %q, the SDK's %q", err, sdkErr)
			}
		})
	}
}

// A whole answer's attempts are bounded by the ten minutes the SDK gave
// them, which their X-Stainless-Timeout says, first-party and on a
// platform, with and without RetryFor; a streamed request's are not.
func TestAWholeAnswersAttemptsAreBoundAsTheirHeaderSays(t *testing.T) {
	if wholeTimeout != strconv.Itoa(int(wholeAttempt/time.Second)) {
		t.Fatalf("the header says %s s, the bound is %v", wholeTimeout, wholeAttempt)
	}
	for _, retryFor := range []time.Duration{0, time.Minute} {
		first, err := New(Config{APIKey: "k", RetryFor: retryFor})
		if err != nil {
			t.Fatal(err)
		}
		on, err := NewOn(Platform{Name: "p", BaseURL: "https://p.example", Send: func(*http.Request, Route) error { return nil }}, Config{RetryFor: retryFor})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*Provider{first, on.Provider} {
			if got := p.whole.Rules().AttemptTimeout; got != wholeAttempt {
				t.Errorf("RetryFor %v: a whole answer's attempt is bounded by %v, want %v", retryFor, got, wholeAttempt)
			}
			if got := p.whole.Target().Header.Get("X-Stainless-Timeout"); got != wholeTimeout {
				t.Errorf("RetryFor %v: X-Stainless-Timeout %q, want %q", retryFor, got, wholeTimeout)
			}
			if got := p.send.Rules().AttemptTimeout; got != 0 {
				t.Errorf("RetryFor %v: a streamed request's attempt is bounded by %v", retryFor, got)
			}
		}
	}
}
