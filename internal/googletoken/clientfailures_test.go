package googletoken

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
)

// A token endpoint's 5xx whose JSON body names an RFC 6749 error code is
// typed (*oauth2.RetrieveError, passing) when asked directly, but its
// status is lost when impersonation flattens it with %v: `oauth2:
// "temporarily_unavailable"`. Behind impersonation the code alone
// decides: the two RFC 6749 gives a server that cannot answer now are
// passing; any other (here Google's "internal_failure") is final, for
// once flattened a 503 and a 401 with an unknown code read alike, and a
// refusal retried for all of --retry-for is what this package exists to
// stop.
func TestBehindImpersonationASourcesErrorCodeDecidesWhetherItPasses(t *testing.T) {
	for _, c := range []struct {
		body    string
		passing bool
	}{
		{`{"error":"temporarily_unavailable"}`, true},
		{`{"error":"server_error"}`, true},
		{`{"error":"internal_failure"}`, false},
	} {
		src := answering(t, 503, c.body)
		user := map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "r", "token_uri": src}
		imp := credsJSON(t, map[string]any{"type": "impersonated_service_account",
			"service_account_impersonation_url": closedURL(t) + "/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
			"source_credentials":                user})
		// the same endpoint, asked directly: passing, its status typed
		creds, err := google.CredentialsFromJSON(context.Background(), []byte(credsJSON(t, user)), "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			t.Fatal(err)
		}
		if _, direct := Source(creds.TokenSource).Token(); provider.IsFinal(direct) {
			t.Errorf("%s asked directly: final: %v", c.body, direct)
		}
		creds, err = google.CredentialsFromJSON(context.Background(), []byte(imp), "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Source(creds.TokenSource).Token()
		if provider.IsFinal(err) == c.passing {
			t.Errorf("%s behind impersonation: final %v, want passing %v: %v", c.body, provider.IsFinal(err), c.passing, err)
		}
	}
}

// h2Endpoint is a loopback HTTPS token endpoint speaking HTTP/2 whose
// handler is h; its client is in the returned context for x/oauth2.
func h2Endpoint(t *testing.T, h http.HandlerFunc) (string, context.Context, *httptest.Server) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, context.WithValue(context.Background(), oauth2.HTTPClient, srv.Client()), srv
}

func userToken(t *testing.T, ctx context.Context, url string) error {
	user := credsJSON(t, map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "r", "token_uri": url})
	creds, err := google.CredentialsFromJSON(ctx, []byte(user), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Source(creds.TokenSource).Token()
	return err
}

// A front end resetting the token request's stream (RST_STREAM
// INTERNAL_ERROR), as a GFE under load may: net/http's http2 StreamError
// is no net.Error and its words are in no list.
func TestAnHTTP2StreamResetByTheTokenEndpointIsPassing(t *testing.T) {
	url, ctx, _ := h2Endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // the server resets the stream: INTERNAL_ERROR
	})
	err := userToken(t, ctx, url)
	t.Logf("%v", err)
	if provider.IsFinal(err) {
		t.Errorf("an HTTP/2 stream reset is final: %v", err)
	}
}

// A token endpoint going away (GOAWAY, then the connection closed with
// the token's request in flight): net/http's http2GoAwayError.
func TestAnHTTP2GoAwayFromTheTokenEndpointIsPassing(t *testing.T) {
	in := make(chan struct{}, 1)
	release := make(chan struct{})
	url, ctx, srv := h2Endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	errc := make(chan error, 1)
	go func() { errc <- userToken(t, ctx, url) }()
	<-in
	sctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = srv.Config.Shutdown(sctx) // GOAWAY sent; the stream still open
	srv.CloseClientConnections()
	err := <-errc
	t.Logf("%v", err)
	if provider.IsFinal(err) {
		t.Errorf("an HTTP/2 GOAWAY is final: %v", err)
	}
}

// The goroutines Within leaves, one per ask ended by its context while
// the token endpoint hangs, end with the token client's timeout
// (Context's; a shorter one here): each ask, queued behind the one
// before on the caching source's lock, is ended by it in turn. Without a
// timeout (x/oauth2's default client) none ever ends.
func TestWithinsGoroutinesEndWithTheTokenClientsTimeout(t *testing.T) {
	var asks atomic.Int32
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asks.Add(1)
		// the body read, the server sees the client's close (its
		// request's context ends): the endpoint's goroutines end too
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	user := credsJSON(t, map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "r", "token_uri": hang.URL})
	creds, err := google.CredentialsFromJSON(withTimeout(context.Background(), 20*time.Millisecond), []byte(user), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	ts := oauth2.ReuseTokenSource(nil, Source(creds.TokenSource))
	before := runtime.NumGoroutine()
	const n = 10
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		_, _ = Within(ctx, ts)
		cancel()
	}
	// not a timed assertion: the wait gives up only far past the n
	// timeouts the asks end by (n × 20 ms)
	grown := runtime.NumGoroutine() - before
	for give := time.Now().Add(30 * time.Second); grown >= n/2 && time.Now().Before(give); grown = runtime.NumGoroutine() - before {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d asks cancelled: %d goroutines more, %d requests at the endpoint", n, grown, asks.Load())
	if grown >= n/2 {
		t.Errorf("%d cancelled asks left %d goroutines: they do not end", n, grown)
	}
}

// An HTTPS proxy answering the token request's CONNECT 503 (its upstream
// briefly unreachable): net/http's errors.New("Service Unavailable"),
// no type, no status, is passing; its 407 (credentials wanted) or 403
// (the host not allowed) is a refusal, final.
func TestAProxysCONNECT503IsPassingAndItsRefusalFinal(t *testing.T) {
	for _, c := range []struct {
		status  int
		passing bool
	}{{503, true}, {502, true}, {407, false}, {403, false}} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", c.status)
		}))
		defer proxy.Close()
		pu, _ := url.Parse(proxy.URL)
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
		err := userToken(t, ctx, "https://oauth2.example.test/token")
		t.Logf("%d: %v", c.status, err)
		if err == nil || provider.IsFinal(err) == c.passing {
			t.Errorf("a proxy's CONNECT %d: final %v, want %v: %v", c.status, provider.IsFinal(err), !c.passing, err)
		}
	}
}

// A token endpoint whose certificate does not verify, or whose URL's
// scheme net/http does not speak: the HTTP client's own failures that
// asking again cannot mend, final.
func TestAnUnverifiedCertificateOrAnUnsupportedSchemeIsFinal(t *testing.T) {
	url, _, _ := h2Endpoint(t, func(w http.ResponseWriter, r *http.Request) {})
	untrusting := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{})
	for name, err := range map[string]error{
		"certificate":        userToken(t, untrusting, url),
		"unsupported scheme": userToken(t, context.Background(), "ftp://127.0.0.1:1/token"),
	} {
		t.Logf("%s: %v", name, err)
		if !provider.IsFinal(err) {
			t.Errorf("%s: not final: %v", name, err)
		}
	}
}

// An AWS-sourced external account whose instance metadata service
// answers 429 (IMDS's throttling) or 503: x/oauth2 writes the body only
// ("unable to retrieve AWS role name - ..."), no status; its 404 (no
// role attached) is final.
func TestAnAWSExternalAccountsThrottledIMDSIsPassing(t *testing.T) {
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	for _, c := range []struct {
		status  int
		body    string
		passing bool
	}{{429, "throttled", true}, {503, "throttled", true}, {404, "<html>404 - Not Found</html>", false}} {
		status := c.status
		imds := answering(t, status, c.body)
		js := credsJSON(t, map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
			"subject_token_type": "urn:ietf:params:aws:token-type:aws4_request", "token_url": closedURL(t) + "/token",
			"credential_source": map[string]any{"environment_id": "aws1", "region_url": imds + "/latest/meta-data/placement/availability-zone",
				"url": imds + "/latest/meta-data/iam/security-credentials", "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"}})
		creds, err := google.CredentialsFromJSON(context.Background(), []byte(js), "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Source(creds.TokenSource).Token()
		t.Logf("%d: %v", status, err)
		if err == nil || provider.IsFinal(err) == c.passing {
			t.Errorf("IMDS's %d: final %v, want %v: %v", status, provider.IsFinal(err), !c.passing, err)
		}
	}
}

// After one ask of a token endpoint that never answered was dropped by
// its context, the endpoint answers again (its next connection would get
// a token): a caching source (google.Credentials' own ReuseTokenSource,
// googlecloud's) still holds its lock for the first ask, which x/oauth2's
// default client never times out, so no later ask gets a token: every
// later turn of the process ends by its own context. Credentials built
// in Context's context (a shorter timeout here) end that first ask.
func TestAnEndpointThatRecoversGivesATokenToTheNextAsk(t *testing.T) {
	var asks atomic.Int32
	release := make(chan struct{})
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asks.Add(1) == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.fresh","token_type":"Bearer","expires_in":3600}`))
	}))
	defer ep.Close()
	defer close(release)
	user := credsJSON(t, map[string]any{"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "r", "token_uri": ep.URL})
	creds, err := google.CredentialsFromJSON(withTimeout(context.Background(), 200*time.Millisecond), []byte(user), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	ts := oauth2.ReuseTokenSource(nil, Source(creds.TokenSource)) // googlecloud's bearer
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = Within(ctx, ts)
	cancel()
	t.Logf("first ask: %v", err)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second) // far past the 200 ms
	defer cancel()
	tok, err := Within(ctx, ts)
	if err != nil {
		t.Errorf("the next ask, the endpoint answering again: %v (endpoint asked %d times)", err, asks.Load())
	} else {
		t.Logf("token %s", tok.AccessToken)
	}
}

func TestContextGivesTokenSourcesAClientWithATimeoutAndKeepsACallersClient(t *testing.T) {
	c, ok := Context(context.Background()).Value(oauth2.HTTPClient).(*http.Client)
	if !ok || c.Timeout != AskTimeout {
		t.Errorf("Context's client %+v, want one with Timeout %v", c, AskTimeout)
	}
	own := &http.Client{}
	if got := Context(context.WithValue(context.Background(), oauth2.HTTPClient, own)).Value(oauth2.HTTPClient); got != own {
		t.Errorf("a caller's client replaced by %+v", got)
	}
}
