package providertest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
)

// CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded fails t unless a wire
// asked for a whole answer (NoStream), refused 429 with a retry-after of
// 7 s, returns an error that says why its retries ended
// (provider.RetriesEnded: retryable, asking for 7 s), transient, whose
// text begins "WIRE: 429 Too Many Requests: " — with its RetryFor 0 and
// set — for req. open makes the wire for a server at baseURL, with no
// retries by count and retryFor.
func CheckAWholeAnswersRefusalSaysWhyTheRetriesEnded(t *testing.T, wire string, req provider.Request, open func(baseURL string, retryFor time.Duration) (provider.Provider, error)) {
	t.Helper()
	for _, retryFor := range []time.Duration{0, time.Minute} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("retry-after-ms", "7000")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
		}))
		p, err := open(srv.URL, retryFor)
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), req, nil)
		srv.Close()
		var re *provider.RetriesEnded
		if !errors.As(err, &re) || !re.Retryable || re.RetryAfter != 7*time.Second {
			t.Fatalf("RetryFor %v: err = %v (%+v), want a RetriesEnded, retryable, asking for 7s", retryFor, err, re)
		}
		if !strings.HasPrefix(err.Error(), wire+": 429 Too Many Requests: ") || !provider.Transient(err) {
			t.Fatalf("RetryFor %v: err = %q, transient %v", retryFor, err, provider.Transient(err))
		}
	}
}
