package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
)

// ResetOverHTTP2 is a TLS server speaking HTTP/2 that answers every
// request 200 with head (a stream's first events, of contentType) and
// then resets the answer's stream (RST_STREAM, INTERNAL_ERROR), as a
// provider's proxy may mid-answer. Its Client trusts it. It is closed
// when tb ends.
func ResetOverHTTP2(tb testing.TB, contentType, head string) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // over HTTP/2: the stream is reset
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv
}

// WantBrokeOff fails tb unless err, a wire's error for an answer
// ResetOverHTTP2 reset before any output, is a stream that broke off:
// transient (the agent sends the request again) and said so in words.
func WantBrokeOff(tb testing.TB, err error) {
	tb.Helper()
	if err == nil || !provider.Transient(err) || !strings.HasPrefix(provider.Failure(err), "the answer's stream broke off: ") {
		tb.Fatalf("err = %v (Failure %q): want a stream that broke off, transient", err, provider.Failure(err))
	}
}
