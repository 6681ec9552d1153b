package googletoken

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
)

type tokens struct {
	tok *oauth2.Token
	err error
}

func (s tokens) Token() (*oauth2.Token, error) { return s.tok, s.err }

func TestSourcePassesTokensAndMarksErrorsFinalUnlessPassing(t *testing.T) {
	want := &oauth2.Token{AccessToken: "t"}
	if got, err := Source(tokens{tok: want}).Token(); got != want || err != nil {
		t.Errorf("Token = %v, %v; want the source's token", got, err)
	}
	refused := &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}}
	if _, err := Source(tokens{err: refused}).Token(); !errors.Is(err, refused) || !provider.IsFinal(err) || !provider.NeverReached(err) {
		t.Errorf("a refusal: %v, want it wrapped, final and never reached", err)
	}
	unknown := errors.New("something not known here")
	if _, err := Source(tokens{err: unknown}).Token(); !errors.Is(err, unknown) || !provider.IsFinal(err) || !provider.NeverReached(err) {
		t.Errorf("an error not known: %v, want it wrapped, final and never reached", err)
	}
	blip := &oauth2.RetrieveError{Response: &http.Response{StatusCode: 503}}
	if _, err := Source(tokens{err: blip}).Token(); !errors.Is(err, blip) || provider.IsFinal(err) || !provider.NeverReached(err) {
		t.Errorf("a 503: %v, want it wrapped, not final, never reached", err)
	}
}

// TestOnlyFailuresKnownToPassArePassing: a token endpoint's or the
// metadata server's answer by its status, the HTTP client's own failures
// unless asking again cannot mend them, by their type or in the words
// x/oauth2 v0.36.0 flattens them into where it keeps no type (jwt/jwt.go's
// and internal/token.go's "cannot fetch token: %v" of net/http's error,
// impersonate.go's, sts_exchange.go's, aws.go's).
func TestOnlyFailuresKnownToPassArePassing(t *testing.T) {
	answer := func(status int) error {
		return fmt.Errorf("oauth2: cannot fetch token: %w", &oauth2.RetrieveError{Response: &http.Response{StatusCode: status}, ErrorCode: "invalid_grant"})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"400 invalid_grant", answer(400), false},
		{"401", answer(401), false},
		{"403", answer(403), false},
		{"408", answer(408), true},
		{"429", answer(429), true},
		{"500", answer(500), true},
		{"503", answer(503), true},
		{"a refusal without its answer", &oauth2.RetrieveError{}, false},
		{"workload identity's exchange refused", errors.New(`oauth2/google: status code 400: {"error":"invalid_grant"}`), false},
		{"impersonation refused", fmt.Errorf("impersonate: %w", errors.New("oauth2/google: status code 403: denied")), false},
		{"a subject token URL refused", errors.New("oauth2/google/externalaccount: status code 401: no"), false},
		{"workload identity's exchange unavailable", errors.New("oauth2/google: status code 503: later"), true},
		{"workload identity's exchange throttled", errors.New("oauth2/google: status code 429: later"), true},
		{"impersonation's source refused, flattened", errors.New(`oauth2/google: unable to generate access token: Post "https://x": oauth2: "invalid_grant" "reauth related error (invalid_rapt)"`), false},
		{"a refusal without a code, flattened", errors.New("oauth2/google: unable to generate access token: oauth2: cannot fetch token: 401 Unauthorized\nResponse: {}"), false},
		{"a token endpoint's 503, flattened", errors.New("oauth2/google: unable to generate access token: oauth2: cannot fetch token: 503 Service Unavailable\nResponse: {}"), true},
		{"temporarily_unavailable, flattened", errors.New(`oauth2: "temporarily_unavailable"`), true},
		{"server_error, flattened", errors.New(`oauth2: "server_error" "try later"`), true},
		{"an unknown code, flattened, no client error", errors.New(`oauth2: "not_a_code"`), false},
		{"impersonation's source with another code (its status lost)", errors.New(`oauth2/google: unable to generate access token: Post "https://x": oauth2: "internal_failure"`), false},
		{"impersonation's source refused connection", errors.New(`oauth2/google: unable to generate access token: Post "https://x": oauth2: cannot fetch token: Post "https://y": dial tcp 127.0.0.1:9: connect: connection refused`), true},
		{"impersonation's source answering no token", errors.New(`oauth2/google: unable to generate access token: Post "https://x": oauth2: server response missing access_token`), false},
		{"a status in other words", errors.New("status code 400: not x/oauth2's"), false},
		{"a status that is no number", errors.New("oauth2/google: status code 4xx: ?"), false},
		{"the endpoint unreachable", errors.New("dial tcp: connection refused"), true},
		{"jwt: refused connection", errors.New(`oauth2: cannot fetch token: Post "https://oauth2.googleapis.com/token": dial tcp 127.0.0.1:9: connect: connection refused`), true},
		{"jwt: body cut", errors.New("oauth2: cannot fetch token: unexpected EOF"), true},
		{"jwt: client timeout", errors.New(`oauth2: cannot fetch token: Post "https://x/token": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`), true},
		{"jwt: not JSON", errors.New("oauth2: cannot fetch token: invalid character '<' looking for beginning of value"), false},
		{"jwt: JSON cut", errors.New("oauth2: cannot fetch token: unexpected end of JSON input"), false},
		{"jwt: a 503", errors.New("oauth2: cannot fetch token: 503 Service Unavailable\nResponse: busy"), true},
		{"jwt: a 403", errors.New("oauth2: cannot fetch token: 403 Forbidden\nResponse: no"), false},
		{"an HTTP/2 stream reset", errors.New(`oauth2: cannot fetch token: Post "https://x/token": stream error: stream ID 1; INTERNAL_ERROR; received from peer`), true},
		{"an HTTP/2 GOAWAY", errors.New(`oauth2: cannot fetch token: Post "https://x/token": http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=""`), true},
		{"an HTTP/2 connection lost", errors.New(`oauth2: cannot fetch token: Post "https://x/token": http2: client connection lost`), true},
		{"a proxy's CONNECT 503", errors.New(`oauth2: cannot fetch token: Post "https://x/token": Service Unavailable`), true},
		{"a proxy's CONNECT 407", errors.New(`oauth2: cannot fetch token: Post "https://x/token": Proxy Authentication Required`), false},
		{"a proxy's CONNECT 403", errors.New(`oauth2: cannot fetch token: Post "https://x/token": Forbidden`), false},
		{"a certificate that does not verify", errors.New(`oauth2: cannot fetch token: Post "https://x/token": tls: failed to verify certificate: x509: certificate signed by unknown authority`), false},
		{"an unsupported scheme", errors.New(`oauth2: cannot fetch token: Post "ftp://x/token": unsupported protocol scheme "ftp"`), false},
		{"a malformed URL", errors.New(`oauth2: cannot fetch token: parse "http://a b/token": invalid character " " in host name`), false},
		{"impersonation's host not found", errors.New(`oauth2/google: unable to generate access token: Post "https://iamcredentials.googleapis.com/x": dial tcp: lookup iamcredentials.googleapis.com: no such host`), false},
		{"impersonation's name server failing", errors.New(`oauth2/google: unable to generate access token: Post "https://iamcredentials.googleapis.com/x": dial tcp: lookup iamcredentials.googleapis.com on 127.0.0.53:53: server misbehaving`), true},
		{"an STS exchange reset", errors.New(`oauth2/google: invalid response from Secure Token Server: Post "https://sts.googleapis.com/v1/token": read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer`), true},
		{"an STS exchange's 500", errors.New("oauth2/google: status code 500: later"), true},
		{"a body closed early", errors.New(`oauth2/google: unable to read body: EOF`), true},
		{"AWS IMDS throttled", errors.New("oauth2/google/externalaccount: unable to retrieve AWS role name - throttled"), true},
		{"AWS IMDS 503", errors.New("oauth2/google/externalaccount: unable to retrieve AWS region - 503 Service Unavailable"), true},
		{"AWS IMDS without a role", errors.New("oauth2/google/externalaccount: unable to retrieve AWS role name - <html>404 - Not Found</html>"), false},
		{"the metadata server's 403, flattened", errors.New("Post \"https://x\": compute: Received 403 `denied`"), false},
		{"the metadata server's 503, flattened", errors.New("Post \"https://x\": compute: Received 503 `busy`"), true},
		{"the metadata server's 404, flattened", errors.New(`Post "https://x": metadata: GCE metadata "instance/service-accounts/default/token" not defined`), false},
		{"a host not found", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, false},
		{"a name server timing out", &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}, true},
		{"the HTTP client failing", &url.Error{Op: "Post", URL: "https://x/token", Err: errors.New("Service Unavailable")}, true},
		{"a URL that does not parse", &url.Error{Op: "parse", URL: "http://a b", Err: errors.New("invalid")}, false},
		{"an unknown authority", &url.Error{Op: "Post", URL: "https://x/token", Err: x509.UnknownAuthorityError{}}, false},
		{"a certificate verification", &url.Error{Op: "Post", URL: "https://x/token", Err: &tls.CertificateVerificationError{Err: errors.New("bad")}}, false},
	} {
		if got := Passing(c.err); got != c.want {
			t.Errorf("%s: Passing = %v, want %v", c.name, got, c.want)
		}
	}
}

// rsaKey is a service account's private key in PEM, made for the test.
func rsaKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// closedURL is a loopback http:// address nothing listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

// answering is a loopback token endpoint (or metadata server) answering
// every request with status and body.
func answering(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func credsJSON(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRealCredentialsFailuresAreFinalUnlessTheyPass builds each failure
// through x/oauth2 v0.36.0 and compute/metadata v0.9.0 themselves, so
// that a change of their types or words upstream fails here: only a
// passing status (5xx) or the network failing is retried; a bad key, a
// grant that cannot be refreshed, an external account that cannot give a
// subject token, a refusal and an answer that is no token are final.
func TestRealCredentialsFailuresAreFinalUnlessTheyPass(t *testing.T) {
	const noToken = `{"hello":"world"}`
	key := rsaKey(t)
	notJSON := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(notJSON, []byte("plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "")
	serviceAccount := func(key, tokenURL string) string {
		return credsJSON(t, map[string]any{"type": "service_account", "client_email": "a@b.iam.gserviceaccount.com", "private_key": key, "token_uri": tokenURL})
	}
	authorizedUser := func(refresh, tokenURL string) string {
		return credsJSON(t, map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": refresh, "token_uri": tokenURL})
	}
	externalAccount := func(source map[string]any) string {
		return credsJSON(t, map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": closedURL(t) + "/token", "credential_source": source})
	}
	for _, c := range []struct {
		name    string
		json    string
		passing bool
	}{
		{"a service account's key that is no key", serviceAccount("garbage", closedURL(t)), false},
		{"a service account without a key", serviceAccount("", closedURL(t)), false},
		{"a service account's token endpoint unreachable (jwt's flattened words)", serviceAccount(key, closedURL(t)), true},
		{"a service account's token endpoint's 503", serviceAccount(key, answering(t, 503, "busy")), true},
		{"a service account's token endpoint's 403", serviceAccount(key, answering(t, 403, `{"error":"invalid_grant"}`)), false},
		{"a service account's token endpoint answering no JSON", serviceAccount(key, answering(t, 200, "<html>")), false},
		{"an authorized user without a refresh token", authorizedUser("", closedURL(t)), false},
		{"an authorized user's token endpoint unreachable", authorizedUser("r", closedURL(t)), true},
		{"an authorized user's token endpoint's 503", authorizedUser("r", answering(t, 503, "busy")), true},
		{"an authorized user's token endpoint's 429", authorizedUser("r", answering(t, 429, "later")), true},
		{"an authorized user's grant refused", authorizedUser("r", answering(t, 400, `{"error":"invalid_grant"}`)), false},
		{"an authorized user's token endpoint answering no token", authorizedUser("r", answering(t, 200, noToken)), false},
		{"an external account's file missing", externalAccount(map[string]any{"file": "/nonexistent/token"}), false},
		{"an external account's executable not allowed", externalAccount(map[string]any{"executable": map[string]any{"command": "/bin/true", "timeout_millis": 5000}}), false},
		{"an external account's file not the JSON declared", externalAccount(map[string]any{"file": notJSON, "format": map[string]any{"type": "json", "subject_token_field_name": "t"}}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			creds, err := google.CredentialsFromJSON(context.Background(), []byte(c.json), "https://www.googleapis.com/auth/cloud-platform")
			if err != nil {
				if c.passing {
					t.Fatalf("at construction: %v", err)
				}
				t.Logf("at construction: %v", err)
				return // refused before any token is asked: final where it is made
			}
			_, err = Source(creds.TokenSource).Token()
			if err == nil {
				t.Fatal("a token")
			}
			if provider.IsFinal(err) == c.passing || !provider.NeverReached(err) {
				t.Errorf("final %v, never reached %v, want final %v: %v", provider.IsFinal(err), provider.NeverReached(err), !c.passing, err)
			}
		})
	}
}

// TestMetadataServersFailuresAreFinalUnlessTheyPass: compute/metadata's
// own errors, through google.ComputeTokenSource at a loopback metadata
// server: its 403 (GKE's Workload Identity misconfigured), its 404 (an
// account it does not have) and a 200 that is no token are final; its
// 500 (after the library's own retries) and a connection refused are
// not.
func TestMetadataServersFailuresAreFinalUnlessTheyPass(t *testing.T) {
	for _, c := range []struct {
		name    string
		host    string
		passing bool
	}{
		{"403", answering(t, 403, "Unable to generate access token; IAM returned 403 Forbidden: Permission 'iam.serviceAccounts.getAccessToken' denied"), false},
		{"404", answering(t, 404, "not found"), false},
		{"200 without a token", answering(t, 200, `{"token_type":"Bearer"}`), false},
		{"500", answering(t, 500, "busy"), true},
		{"refused", closedURL(t), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(c.host, "http://"))
			_, err := Source(google.ComputeTokenSource("")).Token()
			if err == nil {
				t.Fatal("a token")
			}
			if provider.IsFinal(err) == c.passing {
				t.Errorf("final %v, want %v: %v", provider.IsFinal(err), !c.passing, err)
			}
		})
	}
}

// hanging is a token source whose Token waits for release, then answers.
type hanging struct {
	asked   chan struct{}
	release chan struct{}
}

func (h hanging) Token() (*oauth2.Token, error) {
	close(h.asked)
	<-h.release
	return &oauth2.Token{AccessToken: "late"}, nil
}

func TestWithinEndsAtTheContextsEndWhileTheSourceHangs(t *testing.T) {
	h := hanging{asked: make(chan struct{}), release: make(chan struct{})}
	defer close(h.release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.asked; cancel() }()
	// the source answers only once the test ends: a return is the cancel's
	if tok, err := Within(ctx, h); tok != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Within = %v, %v; want context.Canceled", tok, err)
	}
}

func TestWithinGivesTheSourcesAnswer(t *testing.T) {
	want := &oauth2.Token{AccessToken: "t"}
	refused := &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"a context that never ends", context.Background()}, {"a context that may end", ctx}} {
		if got, err := Within(c.ctx, tokens{tok: want}); got != want || err != nil {
			t.Errorf("%s: Within = %v, %v; want the token", c.name, got, err)
		}
		if _, err := Within(c.ctx, tokens{err: refused}); !errors.Is(err, refused) {
			t.Errorf("%s: Within's error %v, want the source's", c.name, err)
		}
	}
	cancel()
	if _, err := Within(ctx, tokens{tok: want}); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context: %v, want context.Canceled", err)
	}
}
