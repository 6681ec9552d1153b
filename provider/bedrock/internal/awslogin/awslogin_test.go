package awslogin

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds"
	"github.com/aws/aws-sdk-go-v2/service/signin"
)

// refreshed is the sign-in service's answer to a good refresh.
const refreshed = `{"accessToken":{"accessKeyId":"ASIAREFRESHED","secretAccessKey":"refreshed-secret","sessionToken":"refreshed-session-token"},"expiresIn":900,"idToken":"refreshed-id-token","refreshToken":"refreshed-refresh-token","tokenType":"aws_sigv4"}`

// secrets are the values no error of ours may show.
var secrets = []string{"cached-secret", "cached-session-token", "cached-refresh-token", "refreshed-secret", "refreshed-refresh-token", "BEGIN EC PRIVATE KEY", "PRIVATE KEY"}

type setup struct {
	fixture     string // testdata/cache file; "" = no file
	mode        fs.FileMode
	answers     []answer
	prefix      string // path of the endpoint
	maxAttempts int
}

type outcome struct {
	creds    aws.Credentials
	err      error
	panicked any
	seen     []seenRequest
	file     []byte
	mode     fs.FileMode
	// before and after bracket the Retrieve.
	before, after time.Time
	// server is the fake's URL (each run has its own port).
	server string
}

// retrieveWith runs one provider, made by mk from the fake's endpoint, on
// its own copy of s.fixture and its own fake.
func retrieveWith(t *testing.T, s setup, mk func(endpoint string, hc *http.Client, path string) aws.CredentialsProvider) (o outcome) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.json")
	if s.fixture != "" {
		mode := s.mode
		if mode == 0 {
			mode = 0o600
		}
		if err := os.WriteFile(path, fixture(t, s.fixture), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	fake := &fakeSignin{answers: s.answers}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := mk(srv.URL+s.prefix, srv.Client(), path)
	o.server = srv.URL

	o.before = time.Now()
	func() {
		defer func() { o.panicked = recover() }()
		o.creds, o.err = p.Retrieve(context.Background())
	}()
	o.after = time.Now()
	o.seen = fake.requests()
	if b, err := os.ReadFile(path); err == nil {
		o.file = b
		fi, _ := os.Stat(path)
		o.mode = fi.Mode().Perm()
	}
	return o
}

func attemptsOf(s setup) int {
	if s.maxAttempts > 0 {
		return s.maxAttempts
	}
	return 3
}

// sdkRetrieve is the SDK's own provider as config builds it: logincreds
// over a sign-in client at the fake, its retryer the standard one with no
// wait.
func sdkRetrieve(t *testing.T, s setup) outcome {
	return retrieveWith(t, s, func(endpoint string, hc *http.Client, path string) aws.CredentialsProvider {
		svc := signin.New(signin.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(endpoint),
			HTTPClient:   hc,
			Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attemptsOf(s)
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			}),
		})
		return logincreds.New(svc, path, func(o *logincreds.Options) { o.RestrictPermissions = true })
	})
}

func ourRetrieve(t *testing.T, s setup) outcome {
	return retrieveWith(t, s, func(endpoint string, hc *http.Client, path string) aws.CredentialsProvider {
		return New(Client{HTTPClient: hc, Endpoint: endpoint, MaxAttempts: attemptsOf(s), Backoff: func(int) time.Duration { return 0 }},
			path, Options{RestrictPermissions: true})
	})
}

var expiresAtJSON = regexp.MustCompile(`"expiresAt":"[^"]*"`)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestRetrieveIsTheSDKs runs the SDK's logincreds and ours on the same
// cache files and fake sign-in service and compares what comes out: the
// credentials, error or not, the requests (method, path, body bytes,
// Content-Type, the DPoP proof's header bytes and claims but jti and iat,
// its signature), the cache file after (bytes but expiresAt, mode).
func TestRetrieveIsTheSDKs(t *testing.T) {
	ok := answer{status: 200, body: refreshed}
	for _, c := range []struct {
		name string
		s    setup
		// What the case is about, checked on our outcome.
		wantErr      string // "" = no error
		wantRequests int
		// Deliberate differences (see the package's report).
		sdkPanics     bool // the SDK panics where we return an error
		headerDiffers bool // the SDK's jwk drops a leading zero byte
	}{
		{name: "unexpired cached credentials are returned without a request", s: setup{fixture: "valid.json"}},
		{name: "expired credentials are refreshed and the cache rewritten", s: setup{fixture: "expired.json", answers: []answer{ok}}, wantRequests: 1},
		{name: "a refresh keeps the file's mode", s: setup{fixture: "expired.json", mode: 0o644, answers: []answer{ok}}, wantRequests: 1},
		{name: "a refresh drops fields the SDK does not know", s: setup{fixture: "expired-extra-field.json", answers: []answer{ok}}, wantRequests: 1},
		{name: "the endpoint's path prefixes /v1/token", s: setup{fixture: "expired.json", prefix: "/signin/", answers: []answer{ok}}, wantRequests: 1},
		{name: "the endpoint's query and fragment are dropped from the URL and the DPoP htu", s: setup{fixture: "expired.json", prefix: "/signin?tenant=a#top", answers: []answer{ok}}, wantRequests: 1},
		{name: "a refresh refused as expired is not retried", s: setup{fixture: "expired.json", answers: []answer{{status: 400, body: `{"__type":"AccessDeniedException","error":"TOKEN_EXPIRED","message":"Session expired"}`}}},
			wantErr: "login session has expired, please reauthenticate", wantRequests: 1},
		{name: "a changed password is not retried", s: setup{fixture: "expired.json", answers: []answer{{status: 400, body: `{"__type":"AccessDeniedException","error":"USER_CREDENTIALS_CHANGED","message":"m"}`}}},
			wantErr: "password has changed", wantRequests: 1},
		{name: "an AccessDeniedException with the clocks an hour apart is retried", s: setup{fixture: "expired.json", answers: []answer{{status: 400, skew: time.Hour, body: `{"__type":"AccessDeniedException","error":"TOKEN_EXPIRED","message":"Session expired"}`}, ok}}, wantRequests: 2},
		{name: "a 401 is not retried", s: setup{fixture: "expired.json", answers: []answer{{status: 401, body: `{"__type":"InvalidGrantException","error":"invalid_grant","message":"bad grant"}`}}},
			wantErr: "HTTP 401: InvalidGrantException (invalid_grant): bad grant", wantRequests: 1},
		{name: "a 500 is retried and the retry's answer taken", s: setup{fixture: "expired.json", answers: []answer{{status: 500, body: `{"__type":"InternalServerException","error":"server_error"}`}, ok}}, wantRequests: 2},
		{name: "500s exhaust the attempts", s: setup{fixture: "expired.json", answers: []answer{{status: 500, body: `{"__type":"InternalServerException"}`}}},
			wantErr: "after 3 attempts", wantRequests: 3},
		{name: "max attempts bounds the retries", s: setup{fixture: "expired.json", maxAttempts: 5, answers: []answer{{status: 503, body: `{}`}}},
			wantErr: "HTTP 503: UnknownError", wantRequests: 5},
		{name: "a 502 without a JSON body is retried", s: setup{fixture: "expired.json", answers: []answer{{status: 502, body: `<html>bad gateway</html>`}, ok}}, wantRequests: 2},
		{name: "a throttling code is retried whatever its status", s: setup{fixture: "expired.json", answers: []answer{{status: 400, body: `{"__type":"com.amazonaws.signin#ThrottlingException:http://internal","message":"slow down"}`}, ok}}, wantRequests: 2},
		{name: "the X-Amzn-ErrorType header names the code", s: setup{fixture: "expired.json", answers: []answer{{status: 400, errorType: "RequestTimeoutException", body: `{"__type":"ValidationException"}`}, ok}}, wantRequests: 2},
		{name: "a 429 TooManyRequestsError is not retried", s: setup{fixture: "expired.json", answers: []answer{{status: 429, body: `{"__type":"TooManyRequestsError","error":"rate_exceeded"}`}}},
			wantErr: "HTTP 429: TooManyRequestsError (rate_exceeded)", wantRequests: 1},
		{name: "an empty answer is refused", s: setup{fixture: "expired.json", answers: []answer{{status: 200, body: `{}`}}},
			wantErr: "missing AccessToken", wantRequests: 1},
		{name: "an answer without expiresIn is refused", s: setup{fixture: "expired.json", answers: []answer{{status: 200, body: strings.Replace(refreshed, `"expiresIn":900,`, ``, 1)}}},
			wantErr: "missing ExpiresIn", wantRequests: 1},
		{name: "an answer without a refresh token is refused and the cache kept", s: setup{fixture: "expired.json", answers: []answer{{status: 200, body: strings.Replace(refreshed, `"refreshToken":"refreshed-refresh-token",`, ``, 1)}}},
			wantErr: "missing refreshToken", wantRequests: 1},
		{name: "an answer that is not JSON is refused", s: setup{fixture: "expired.json", answers: []answer{{status: 200, body: `token`}}},
			wantErr: "decode sign-in answer", wantRequests: 1},
		{name: "a missing cache file asks for a login", s: setup{}, wantErr: "token file not found, please reauthenticate"},
		{name: "a malformed cache file is an error", s: setup{fixture: "malformed.json"}, wantErr: "unexpected end of JSON input"},
		{name: "a cache time that is not RFC 3339 is an error", s: setup{fixture: "valid-bad-time.json"}, wantErr: "cannot parse"},
		{name: "an empty cache object lacks accessToken", s: setup{fixture: "empty-object.json"}, wantErr: "missing accessToken"},
		{name: "cached credentials without an account are refused", s: setup{fixture: "valid-no-accountid.json"}, wantErr: "missing accessToken.accountId"},
		{name: "an expired cache without clientId is refused before a request", s: setup{fixture: "expired-no-clientid.json"}, wantErr: "missing clientId"},
		{name: "a key that is not PEM is an error", s: setup{fixture: "expired-bad-pem.json"}, wantErr: "dpopKey holds no PEM block", sdkPanics: true},
		{name: "a PEM key that is not an EC key is an error", s: setup{fixture: "expired-bad-der.json"}, wantErr: "parse ec private key"},
		{name: "a cache holding null is an error", s: setup{fixture: "null.json"}, wantErr: "holds null", sdkPanics: true},
		{name: "a key with a short X is sent padded", s: setup{fixture: "expired-short-x.json", answers: []answer{ok}}, wantRequests: 1, headerDiffers: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdk := sdkRetrieve(t, c.s)
			ours := ourRetrieve(t, c.s)

			t.Logf("SDK: %v (panic: %v)\nours: %v", sdk.err, sdk.panicked, ours.err)
			if ours.panicked != nil {
				t.Fatalf("ours panicked: %v", ours.panicked)
			}
			if c.sdkPanics != (sdk.panicked != nil) {
				t.Fatalf("SDK panicked: %v, case says %v", sdk.panicked, c.sdkPanics)
			}
			if c.wantErr == "" && ours.err != nil {
				t.Fatalf("ours: %v", ours.err)
			}
			if c.wantErr != "" && (ours.err == nil || !strings.Contains(ours.err.Error(), c.wantErr)) {
				t.Fatalf("ours: error %v, want one saying %q", ours.err, c.wantErr)
			}
			if !c.sdkPanics && (sdk.err == nil) != (ours.err == nil) {
				t.Fatalf("error or not differs: SDK %v, ours %v", sdk.err, ours.err)
			}
			if ours.err != nil {
				for _, secret := range secrets {
					if strings.Contains(ours.err.Error(), secret) {
						t.Errorf("our error shows %q: %v", secret, ours.err)
					}
				}
			}
			if len(ours.seen) != c.wantRequests {
				t.Errorf("ours sent %d requests, want %d", len(ours.seen), c.wantRequests)
			}
			if !c.sdkPanics {
				compareRequests(t, c.s.fixture, sdk, ours, c.headerDiffers)
			}
			compareCredentials(t, sdk, ours)
			if !c.sdkPanics {
				compareFiles(t, sdk, ours)
			}
		})
	}
}

func compareRequests(t *testing.T, fixtureName string, sdk, ours outcome, headerDiffers bool) {
	t.Helper()
	if len(sdk.seen) != len(ours.seen) {
		t.Fatalf("the SDK sent %d requests, ours %d", len(sdk.seen), len(ours.seen))
	}
	var wantKey []byte
	if len(ours.seen) > 0 {
		wantKey = publicKeyOf(t, "p256.pem")
		if strings.Contains(fixtureName, "short-x") {
			wantKey = publicKeyOf(t, "p256-short-x.pem")
		}
	}
	for i := range ours.seen {
		s, o := sdk.seen[i], ours.seen[i]
		if s.method != o.method || s.path != o.path || s.query != o.query || s.contentType != o.contentType || s.body != o.body {
			t.Errorf("request %d: SDK %s %s?%s %q %s, ours %s %s?%s %q %s", i, s.method, s.path, s.query, s.contentType, s.body, o.method, o.path, o.query, o.contentType, o.body)
		}
		if s.authorization != "" || o.authorization != "" {
			t.Errorf("request %d: Authorization sent: SDK %q, ours %q (CreateOAuth2Token is anonymous)", i, s.authorization, o.authorization)
		}
		if !o.signatureVerifies || !s.signatureVerifies {
			t.Errorf("request %d: DPoP signature verifies: SDK %v, ours %v", i, s.signatureVerifies, o.signatureVerifies)
		}
		if !bytes.Equal(o.publicKey, wantKey) {
			t.Errorf("request %d: our DPoP jwk is not the cache's key", i)
		}
		if headerDiffers == (s.dpopHeader == o.dpopHeader) {
			t.Errorf("request %d: DPoP header bytes equal: %v, want %v\nSDK  %+v\nours %+v", i, s.dpopHeader == o.dpopHeader, !headerDiffers, s.header, o.header)
		}
		if headerDiffers && (len(o.header.JWK.X) != 43 || len(s.header.JWK.X) != 42) {
			t.Errorf("request %d: jwk x of %d characters (SDK %d), want 43 (SDK 42)", i, len(o.header.JWK.X), len(s.header.JWK.X))
		}
		sHTU, oHTU := strings.TrimPrefix(s.claims.HTU, sdk.server), strings.TrimPrefix(o.claims.HTU, ours.server)
		if s.claims.HTM != o.claims.HTM || sHTU != oHTU || o.claims.HTM != "POST" || o.claims.HTU != ours.server+o.path {
			t.Errorf("request %d: claims: SDK %+v, ours %+v", i, s.claims, o.claims)
		}
		if !uuidV4.MatchString(o.claims.JTI) || !uuidV4.MatchString(s.claims.JTI) {
			t.Errorf("request %d: jti SDK %q, ours %q, want UUIDs", i, s.claims.JTI, o.claims.JTI)
		}
		if o.claims.IAT < ours.before.Unix() || o.claims.IAT > ours.after.Unix() {
			t.Errorf("request %d: our iat %d is outside the Retrieve [%d, %d]", i, o.claims.IAT, ours.before.Unix(), ours.after.Unix())
		}
		if i > 0 && o.claims.JTI == ours.seen[i-1].claims.JTI {
			t.Errorf("request %d: a retry reuses the jti", i)
		}
	}
}

func compareCredentials(t *testing.T, sdk, ours outcome) {
	t.Helper()
	s, o := sdk.creds, ours.creds
	se, oe := s.Expires, o.Expires
	s.Expires, o.Expires = time.Time{}, time.Time{}
	if s != o {
		t.Errorf("credentials: SDK %+v, ours %+v", s, o)
	}
	if len(ours.seen) == 0 || ours.err != nil {
		if !se.Equal(oe) {
			t.Errorf("expires: SDK %v, ours %v", se, oe)
		}
		return
	}
	// Refreshed: now + expiresIn, each within its own Retrieve.
	for _, x := range []struct {
		who     string
		exp     time.Time
		outcome outcome
	}{{"SDK", se, sdk}, {"ours", oe, ours}} {
		if x.exp.Before(x.outcome.before.Add(900*time.Second)) || x.exp.After(x.outcome.after.Add(900*time.Second)) {
			t.Errorf("%s: expires %v, not 900 s after the refresh", x.who, x.exp)
		}
	}
}

func compareFiles(t *testing.T, sdk, ours outcome) {
	t.Helper()
	s := expiresAtJSON.ReplaceAllString(string(sdk.file), `"expiresAt":"…"`)
	o := expiresAtJSON.ReplaceAllString(string(ours.file), `"expiresAt":"…"`)
	if s != o {
		t.Errorf("cache file after:\nSDK  %s\nours %s", s, o)
	}
	if sdk.mode != ours.mode {
		t.Errorf("cache file mode: SDK %v, ours %v", sdk.mode, ours.mode)
	}
}

// TestCachedTokenFilepathIsTheSDKs compares the cache path with the SDK's
// for sessions and directories.
func TestCachedTokenFilepathIsTheSDKs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, c := range []struct{ session, dir string }{
		{"arn:aws:sts::123456789012:assumed-role/Admin/user", ""},
		{"  arn:aws:sts::123456789012:assumed-role/Admin/user \n", ""},
		{"session", "/tmp/login-cache"},
		{"", ""},
		{"ÜñíçødΣ", "relative/dir"},
	} {
		want, wantErr := logincreds.StandardCachedTokenFilepath(c.session, c.dir)
		got, err := CachedTokenFilepath(c.session, c.dir)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Errorf("CachedTokenFilepath(%q, %q) = %q, %v; SDK %q, %v", c.session, c.dir, got, err, want, wantErr)
		}
	}
	got, _ := CachedTokenFilepath("s", "")
	if !strings.HasPrefix(got, filepath.Join(home, ".aws", "login", "cache")+string(filepath.Separator)) {
		t.Errorf("default directory: %s", got)
	}
}

// TestRetrieveStopsWhenTheContextEnds cancels the context in the wait
// before a retry: Retrieve returns the context's error, one request sent.
func TestRetrieveStopsWhenTheContextEnds(t *testing.T) {
	fake := &fakeSignin{answers: []answer{{status: 500, body: `{}`}}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "cache.json")
	if err := os.WriteFile(path, fixture(t, "expired.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := New(Client{HTTPClient: srv.Client(), Endpoint: srv.URL, Backoff: func(int) time.Duration {
		cancel()
		return time.Hour
	}}, path, Options{})
	_, err := p.Retrieve(ctx)
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("Retrieve: %v, want the context's end", err)
	}
	if n := len(fake.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestAConnectionErrorIsRetried points the client at a closed port: each
// attempt fails to connect and is retried, as the SDK retries a send error.
func TestAConnectionErrorIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close()
	path := filepath.Join(t.TempDir(), "cache.json")
	if err := os.WriteFile(path, fixture(t, "expired.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var waits []int
	p := New(Client{Endpoint: endpoint, Backoff: func(attempt int) time.Duration {
		waits = append(waits, attempt)
		return 0
	}}, path, Options{})
	_, err := p.Retrieve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("Retrieve: %v, want a failure after 3 attempts", err)
	}
	if fmt.Sprint(waits) != "[1 2]" {
		t.Errorf("waits before attempts %v, want [1 2]", waits)
	}
}

// TestNoEndpointIsAnErrorOnlyForARefresh: unexpired credentials need no
// sign-in endpoint (the region may be unset); a refresh does.
func TestNoEndpointIsAnErrorOnlyForARefresh(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		fixture string
		wantErr bool
	}{{"valid.json", false}, {"expired.json", true}} {
		path := filepath.Join(dir, c.fixture)
		if err := os.WriteFile(path, fixture(t, c.fixture), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := New(Client{}, path, Options{}).Retrieve(context.Background())
		if (err != nil) != c.wantErr || (err != nil && !strings.Contains(err.Error(), "no sign-in endpoint")) {
			t.Errorf("%s: %v, want error %v", c.fixture, err, c.wantErr)
		}
	}
}

// TestAKeyOnAnotherCurveIsRefused: ES256 is P-256; the SDK would sign
// with a P-384 key under a P-256 header (or panic), we say what is wrong.
func TestAKeyOnAnotherCurveIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	if err := os.WriteFile(path, fixture(t, "expired-p384.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := &fakeSignin{answers: []answer{{status: 200, body: refreshed}}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	_, err := New(Client{HTTPClient: srv.Client(), Endpoint: srv.URL}, path, Options{}).Retrieve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not P-256") {
		t.Fatalf("Retrieve: %v, want a refusal of the curve", err)
	}
	if n := len(fake.requests()); n != 0 {
		t.Errorf("%d requests sent with a bad key", n)
	}
}

// TestSaveCreatesAMissingFileWithTheRestrictedMode: a refresh whose file
// has gone is written 0600 when RestrictPermissions is set, else as
// os.Create makes a file.
func TestSaveCreatesAMissingFileWithTheRestrictedMode(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "reference")
	f, err := os.Create(ref)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(ref)
	for _, c := range []struct {
		restrict bool
		want     fs.FileMode
	}{{true, 0o600}, {false, fi.Mode().Perm()}} {
		path := filepath.Join(dir, fmt.Sprint(c.restrict))
		p := &provider{path: path, opts: Options{RestrictPermissions: c.restrict}}
		if err := p.save(&cacheFile{AccessToken: &cachedCredentials{}}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.want {
			t.Errorf("restrict %v: mode %v, want %v", c.restrict, fi.Mode().Perm(), c.want)
		}
	}
}

// TestSaveReplacesTheFileNeverWritesThroughIt: a refresh replaces the
// cache file whole (through internal/wholefile), where the SDK writes it
// in place: a hard link to the old file keeps the old session, the file
// takes the old one's mode (as a file created with it), and nothing is
// left beside it.
func TestSaveReplacesTheFileNeverWritesThroughIt(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "reference")
	f, err := os.OpenFile(ref, os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	want, _ := os.Stat(ref)
	os.Remove(ref)
	path := filepath.Join(dir, "cache.json")
	const old = `{"old":"session"}`
	if err := os.WriteFile(path, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "link")); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	p := &provider{path: path}
	if err := p.save(&cacheFile{AccessToken: &cachedCredentials{}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "link")); string(b) != old {
		t.Errorf("the hard link holds %q, want the old session", b)
	}
	if b, _ := os.ReadFile(path); string(b) == old {
		t.Errorf("the cache file was not replaced")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("the cache file's mode %v (%v), want %v", fi.Mode().Perm(), err, want.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("directory holds %d entries, want the file and the link", len(es))
	}
}
