package providertest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"
)

// TokenEndpoint is a loopback OAuth token endpoint for the wires that
// send with a Google token (vertex, googlecloud): it answers its first
// requests as a test asks (a status, or never) and every later one with a
// token, counting them. It is for tests; it must not be used to send to
// a real provider.
type TokenEndpoint struct {
	// URL is the token endpoint's (".../token"), or a closed port's.
	URL   string
	calls atomic.Int32
}

// NeverAnswered, among a TokenEndpoint's failures, is a request the
// endpoint takes and never answers (until the client gives up or the
// test ends).
const NeverAnswered = -1

// NewTokenEndpoint starts a token endpoint that answers its first
// requests with fail, one each — a status (a 5xx with an empty JSON body,
// a 4xx with invalid_grant) or NeverAnswered — and later ones with a
// token; closed with the test.
func NewTokenEndpoint(t testing.TB, fail ...int) *TokenEndpoint {
	t.Helper()
	e := &TokenEndpoint{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(e.calls.Add(1))
		if n <= len(fail) && fail[n-1] == NeverAnswered {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if n <= len(fail) {
			w.WriteHeader(fail[n-1])
			if fail[n-1] < 500 {
				_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"from the fake"}`))
			}
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"ya29.fresh","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before the server's Close
	e.URL = srv.URL + "/token"
	return e
}

// NewClosedTokenEndpoint is a token endpoint at a port nothing listens
// on: every request's connection is refused.
func NewClosedTokenEndpoint(t testing.TB) *TokenEndpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &TokenEndpoint{URL: "http://" + l.Addr().String() + "/token"}
	_ = l.Close()
	return e
}

// Calls is how many requests the endpoint took.
func (e *TokenEndpoint) Calls() int32 { return e.calls.Load() }

// Credentials are Google credentials whose tokens come from e (a client
// credentials grant).
func (e *TokenEndpoint) Credentials() *google.Credentials {
	cc := clientcredentials.Config{ClientID: "id", ClientSecret: "secret", TokenURL: e.URL, AuthStyle: oauth2.AuthStyleInParams}
	return &google.Credentials{TokenSource: cc.TokenSource(context.Background())}
}

// DefaultCredentials points the application default credentials at e for
// the test: an authorized_user file whose token_uri is e's, named by
// GOOGLE_APPLICATION_CREDENTIALS.
func (e *TokenEndpoint) DefaultCredentials(t *testing.T) {
	t.Helper()
	adc := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(adc, []byte(`{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"r","token_uri":"`+e.URL+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
}

// CheckAskedAgainAfterNeverAnswered runs complete, a request through a
// wire whose tokens come from e (its first request NeverAnswered), and
// fails t unless the request is answered — not held by the token request
// never answered, which the wire's token requests' own bound ends — with
// e asked twice. A 20 s guard keeps a failing test from hanging.
func (e *TokenEndpoint) CheckAskedAgainAfterNeverAnswered(t *testing.T, complete func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- complete() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the request, its first token request never answered: %v (token endpoint asked %d times)", err, e.Calls())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request still waits on a token request never answered: the default credentials' token requests have no bound")
	}
	if n := e.Calls(); n != 2 {
		t.Errorf("the token endpoint was asked %d times, want 2 (the one never answered, then again)", n)
	}
}
