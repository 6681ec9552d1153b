package send

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/ratelimit"
)

// TestAnAuthorizationFailedAfterTheGateIsToldToTheLimiter: an attempt let
// through the gate whose authorization fails (each: a platform's Send,
// bedrock's authorize) got no answer and never reached the provider: the
// limiter hears so (Unreached), as of a refused connection, or it would
// count the attempt in flight (a review found it so).
func TestAnAuthorizationFailedAfterTheGateIsToldToTheLimiter(t *testing.T) {
	addr := "127.0.0.1:9"
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	limiter := &ratelimit.Limiter{Clock: clock}
	var waits []time.Duration
	s := newSender(t, "http://"+addr, Anthropic(3), &waits).WithLimiter(limiter, "anthropic", "")
	noCreds := provider.Final(provider.Unsent(errors.New("no credentials")))
	_, err := s.PostEach(context.Background(), []byte(`{}`), func(*http.Request) error { return noCreds })
	if !provider.IsFinal(err) {
		t.Fatalf("want the final error, got %v", err)
	}
	key := ratelimit.Key{Endpoint: addr}
	if st := limiter.State(key); st.Sent != st.Answers {
		t.Errorf("after an attempt whose authorization failed the limiter holds %d sent, %d answered: one in flight that never left", st.Sent, st.Answers)
	}
}

// TestAFinalAuthorizationAfterAReachedAttemptIsNotNeverReached: a
// request one of whose attempts was written (the connection broke after
// it) and whose next attempt's authorization failed (Final, Unsent) may
// have reached the provider: NeverReached says no, and it stays final.
func TestAFinalAuthorizationAfterAReachedAttemptIsNotNeverReached(t *testing.T) {
	addr := hangUp(t)
	var waits []time.Duration
	s := newSender(t, "http://"+addr, Anthropic(3), &waits)
	n := 0
	_, err := s.PostEach(context.Background(), []byte(`{}`), func(*http.Request) error {
		n++
		if n == 1 {
			return nil // the first attempt authorized and written
		}
		return provider.Final(provider.Unsent(errors.New("credentials expired; refresh failed")))
	})
	if n != 2 || !provider.IsFinal(err) || provider.Transient(err) {
		t.Fatalf("want 2 attempts and a final error, got %d: %v", n, err)
	}
	if provider.NeverReached(err) {
		t.Errorf("NeverReached(%v) = true, but attempt 1 was written to the provider", err)
	}
}

// TestAnAuthorizationThatMayPassIsAConnectionsErrorWhenTheRetriesEnd: an
// attempt whose authorization failed for a reason another attempt may
// mend (each's error marked Unsent, not Final: a token endpoint's 503 or
// refused connection) ends the retries as a *provider.ConnectionError —
// transient, never reached, its attempts counted, its cause reached —
// so that the agent sends the request again for it as for a refused
// connection (with no retries of the wire's own, a whole answer under
// --retry-for, it was the bare error, not transient).
func TestAnAuthorizationThatMayPassIsAConnectionsErrorWhenTheRetriesEnd(t *testing.T) {
	var waits []time.Duration
	s := newSender(t, "http://127.0.0.1:9", Anthropic(1), &waits)
	cause := errors.New("oauth2: cannot fetch token: 503 Service Unavailable")
	calls := 0
	_, err := s.PostEach(context.Background(), []byte(`{}`), func(*http.Request) error {
		calls++
		return provider.Unsent(cause)
	})
	var ce *provider.ConnectionError
	if !errors.As(err, &ce) || !errors.Is(err, cause) {
		t.Fatalf("want a ConnectionError around the cause, got %T %v", err, err)
	}
	if calls != 2 || ce.Attempts != 2 || len(waits) != 1 {
		t.Errorf("%d authorizations, %d attempts counted, %d waits: want 2, 2, 1 (MaxRetries 1)", calls, ce.Attempts, len(waits))
	}
	if !provider.Transient(err) || !provider.NeverReached(err) {
		t.Errorf("Transient %v, NeverReached %v: want both", provider.Transient(err), provider.NeverReached(err))
	}
}
