package send

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
)

// PostRead reads the body of the answer that ends the call inside the
// retries: one that breaks off is sent again where the rules retry a
// dropped body (anthropic-sdk-go's), its read's error ending the call
// where they do not (openai-go's) or once they are spent; the answer
// returned holds its body read.
func TestAWholeAnswerIsReadInsideTheRetries(t *testing.T) {
	ok := answer{status: 200, body: `{"ok":true}`}
	cut := answer{status: 200, cut: true}
	for _, tc := range []struct {
		name     string
		rules    Rules
		answers  []answer
		attempts int
		err      string // "" for the answer's body
	}{
		{"anthropic's: a cut answer sent again", Anthropic(2), []answer{cut, ok}, 2, ""},
		{"anthropic's: cut every time", Anthropic(2), []answer{cut}, 3, "error reading response body: unexpected EOF"},
		{"anthropic's: told not to retry", Anthropic(2), []answer{{status: 200, cut: true, header: map[string]string{"x-should-retry": "false"}}, ok}, 1, "error reading response body: unexpected EOF"},
		{"openai's: a cut answer ends the call", OpenAI(2), []answer{cut, ok}, 1, "unexpected EOF"},
		{"a whole answer read", Anthropic(2), []answer{ok}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{answers: tc.answers}
			srv := httptest.NewServer(sc)
			defer srv.Close()
			var waits []time.Duration
			s := newSender(t, srv.URL, tc.rules, &waits)
			res, err := s.PostRead(context.Background(), []byte(`{}`), nil)
			if len(sc.counts) != tc.attempts {
				t.Errorf("%d attempts, want %d", len(sc.counts), tc.attempts)
			}
			if tc.err != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tc.err) {
					t.Fatalf("err %v, want one ending %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if string(b) != `{"ok":true}` {
				t.Fatalf("the answer's body reads %q", b)
			}
		})
	}
}

// With Rules.AttemptTimeout, an attempt of PostRead that runs out —
// waiting for its answer, or reading a body that stalls — is retried as a
// connection error is, and the next one's answer is the call's.
func TestAWholeAnswersAttemptThatRunsOutIsSentAgain(t *testing.T) {
	for _, stall := range []string{"before the answer", "inside the body"} {
		t.Run(stall, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// read whole, so that the server hears the client hang up
				_, _ = io.ReadAll(r.Body)
				if n.Add(1) == 1 {
					if stall == "inside the body" {
						w.Header().Set("Content-Length", "100")
						_, _ = w.Write([]byte(`{"ok"`))
						w.(http.Flusher).Flush()
					}
					<-r.Context().Done() // until the attempt gives up
					return
				}
				_, _ = w.Write([]byte(`{"ok":true}`))
			}))
			defer srv.Close()
			rules := Anthropic(2)
			rules.AttemptTimeout = 100 * time.Millisecond
			var waits []time.Duration
			s := newSender(t, srv.URL, rules, &waits)
			// the call's own bound, far past the attempt's: without the
			// attempt's, the first attempt would wait for it
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := s.PostRead(ctx, []byte(`{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if string(b) != `{"ok":true}` || n.Load() != 2 {
				t.Fatalf("%d attempts, the answer %q", n.Load(), b)
			}
		})
	}
}

// An attempt that runs out of Rules.AttemptTimeout is a connection's
// error, as the SDK took it: retried even when its answer said
// x-should-retry: false, and, when it is the last, a ConnectionError the
// agent calls transient — not the caller's deadline (context's
// DeadlineExceeded), which it would not resend.
func TestAnAttemptThatRunsOutIsAConnectionsErrorNotTheCallersDeadline(t *testing.T) {
	for _, stall := range []string{"before the answer", "inside the body"} {
		t.Run(stall, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				n.Add(1)
				if stall == "inside the body" {
					w.Header().Set("x-should-retry", "false")
					w.Header().Set("Content-Length", "100")
					_, _ = w.Write([]byte(`{"ok"`))
					w.(http.Flusher).Flush()
				}
				<-r.Context().Done()
			}))
			defer srv.Close()
			rules := Anthropic(1)
			rules.AttemptTimeout = 100 * time.Millisecond
			var waits []time.Duration
			s := newSender(t, srv.URL, rules, &waits)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := s.PostRead(ctx, []byte(`{}`), nil)
			var ce *provider.ConnectionError
			var timedOut *AttemptTimedOut
			if n.Load() != 2 || !errors.As(err, &ce) || !errors.As(err, &timedOut) || errors.Is(err, context.DeadlineExceeded) || !provider.Transient(err) {
				t.Fatalf("%d attempts, err %v (%T): want 2, a ConnectionError around AttemptTimedOut, transient", n.Load(), err, err)
			}
		})
	}
}
