package awssso

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/aws-sdk-go-v2/service/sso"
	"github.com/aws/aws-sdk-go-v2/service/ssooidc"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

// Profile values of every case.
const (
	startURL    = "https://example.awsapps.com/start"
	sessionName = "my-sso"
	accountID   = "123456789012"
	roleName    = "Bedrock Reader" // a space, to see the query escaped alike
)

// credsCase is one SSO profile, its cache file and the services' answers.
type credsCase struct {
	name    string
	session bool   // an sso-session profile, else a legacy one
	file    string // testdata fixture in the cache, "" for none
	mode    os.FileMode
	sso     []reply // GetRoleCredentials answers
	oidc    []reply // CreateToken answers
	wantErr bool
	// errHas are texts both sides' errors must hold.
	errHas []string
}

// outcome is what one side did for a case.
type outcome struct {
	creds      aws.Credentials
	err        error
	ssoSeen    []seen
	oidcSeen   []seen
	file       []byte // the cache file after Retrieve
	mode       os.FileMode
	tmpLeft    []string // other files left in the cache directory
	start, end time.Time
}

// retrieve runs one side of c: sdk or ours, in its own HOME and fakes.
func retrieve(t *testing.T, c credsCase, sdk bool, ctx context.Context) outcome {
	t.Helper()
	key := startURL
	if c.session {
		key = sessionName
	}
	var content []byte
	if c.file != "" {
		content = fixture(t, c.file)
	}
	mode := c.mode
	if mode == 0 {
		mode = 0o600
	}
	path := homeWithToken(t, key, content, mode)
	fs, fo := newFake(t, c.sso...), newFake(t, c.oidc...)
	var p aws.CredentialsProvider
	switch {
	case sdk && c.session:
		tp := ssocreds.NewSSOTokenProvider(sdkOIDC(fo), path)
		p = ssocreds.New(sdkSSO(fs), accountID, roleName, startURL, func(o *ssocreds.Options) {
			o.SSOTokenProvider, o.CachedTokenFilepath = tp, path
		})
	case sdk:
		p = ssocreds.New(sdkSSO(fs), accountID, roleName, startURL)
	case c.session:
		p = NewCredentials(ourClient(fs), CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL,
			CachedTokenFilepath: path, TokenProvider: NewTokenProvider(ourClient(fo), path)})
	default:
		p = NewCredentials(ourClient(fs), CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL})
	}
	var o outcome
	o.start = time.Now()
	o.creds, o.err = p.Retrieve(ctx)
	o.end = time.Now()
	o.ssoSeen, o.oidcSeen = fs.requests(), fo.requests()
	if b, err := os.ReadFile(path); err == nil {
		o.file = b
		info, _ := os.Stat(path)
		o.mode = info.Mode()
	}
	entries, _ := os.ReadDir(strings.TrimSuffix(path, "/"+pathBase(path)))
	for _, e := range entries {
		if e.Name() != pathBase(path) {
			o.tmpLeft = append(o.tmpLeft, e.Name())
		}
	}
	return o
}

// pathBase is the last element of a slash path.
func pathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// expiresAtMember matches the expiresAt member a refresh writes.
var expiresAtMember = regexp.MustCompile(`"expiresAt":"([^"]*)"`)

// refreshedExpiry checks that the file's expiresAt is now+expiresIn for a
// now within [start, end] (to the second) and replaces it with a mark, so
// that the rest of the bytes can be compared.
func refreshedExpiry(t *testing.T, side string, file []byte, start, end time.Time, expiresIn time.Duration) []byte {
	t.Helper()
	m := expiresAtMember.FindSubmatch(file)
	if m == nil {
		t.Errorf("%s: the refreshed file has no expiresAt: %s", side, file)
		return file
	}
	at, err := time.Parse(time.RFC3339, string(m[1]))
	if err != nil {
		t.Errorf("%s: expiresAt %q: %v", side, m[1], err)
	}
	if lo, hi := start.Add(expiresIn).Truncate(time.Second), end.Add(expiresIn); at.Before(lo) || at.After(hi) {
		t.Errorf("%s: expiresAt %s, want within [%s, %s]", side, at, lo, hi)
	}
	return expiresAtMember.ReplaceAll(file, []byte(`"expiresAt":"<now+expiresIn>"`))
}

// compareOutcomes fails t where ours differs from the SDK's.
func compareOutcomes(t *testing.T, c credsCase, sdk, ours outcome) {
	t.Helper()
	if (sdk.err != nil) != (ours.err != nil) {
		t.Fatalf("error: SDK %v, ours %v", sdk.err, ours.err)
	}
	if (ours.err != nil) != c.wantErr {
		t.Fatalf("error %v, want error: %v", ours.err, c.wantErr)
	}
	for _, s := range c.errHas {
		if !strings.Contains(sdk.err.Error(), s) || !strings.Contains(ours.err.Error(), s) {
			t.Errorf("errors lack %q:\n SDK:  %v\n ours: %v", s, sdk.err, ours.err)
		}
	}
	if d := cmp.Diff(sdk.creds, ours.creds); d != "" {
		t.Errorf("credentials (-SDK +ours):\n%s", d)
	}
	if d := cmp.Diff(sdk.ssoSeen, ours.ssoSeen); d != "" {
		t.Errorf("requests to SSO (-SDK +ours):\n%s", d)
	}
	if d := cmp.Diff(sdk.oidcSeen, ours.oidcSeen); d != "" {
		t.Errorf("requests to SSO-OIDC (-SDK +ours):\n%s", d)
	}
	sdkFile, ourFile := sdk.file, ours.file
	if c.file != "" && string(sdkFile) != string(fixture(t, c.file)) { // the SDK rewrote it
		sdkFile = refreshedExpiry(t, "SDK", sdkFile, sdk.start, sdk.end, time.Hour)
		ourFile = refreshedExpiry(t, "ours", ourFile, ours.start, ours.end, time.Hour)
	}
	if string(sdkFile) != string(ourFile) {
		t.Errorf("cache file after:\n SDK:  %s\n ours: %s", sdkFile, ourFile)
	}
	if sdk.mode != ours.mode {
		t.Errorf("cache file mode: SDK %v, ours %v", sdk.mode, ours.mode)
	}
	if len(ours.tmpLeft) > 0 {
		t.Errorf("files left beside the cache file: %v", ours.tmpLeft)
	}
}

// TestSSOCredentialsAreTheSDKs runs the SDK's ssocreds and ours over the
// same profiles, cache files and scripted services.
func TestSSOCredentialsAreTheSDKs(t *testing.T) {
	const expiredMsg = "the SSO session has expired or is invalid"
	ok := []reply{roleCredentialsOK}
	cases := []credsCase{
		// Legacy profiles: the cached token as is, never refreshed.
		{name: "legacy valid token", file: "valid_legacy.json", sso: ok},
		{name: "legacy expired token is an invalid session, nothing sent", file: "expired.json", sso: ok, oidc: []reply{createTokenOK},
			wantErr: true, errHas: []string{expiredMsg}},
		{name: "legacy missing cache file", sso: ok, wantErr: true, errHas: []string{expiredMsg}},
		{name: "legacy malformed cache file", file: "malformed.json", sso: ok, wantErr: true, errHas: []string{expiredMsg}},
		{name: "legacy cache file without accessToken", file: "missing_access.json", sso: ok, wantErr: true, errHas: []string{expiredMsg}},
		{name: "legacy non-UTC expiry", file: "valid_non_utc.json", sso: ok},
		// GetRoleCredentials answers.
		{name: "GetRoleCredentials 401 is not retried", file: "valid_legacy.json", sso: []reply{unauthorized, roleCredentialsOK},
			wantErr: true, errHas: []string{"UnauthorizedException", "Session token not found or invalid"}},
		{name: "GetRoleCredentials 500 three times", file: "valid_legacy.json", sso: []reply{serverError}, wantErr: true,
			errHas: []string{"InternalServerException"}},
		{name: "GetRoleCredentials 500 then success", file: "valid_legacy.json", sso: []reply{serverError, roleCredentialsOK}},
		{name: "GetRoleCredentials throttled then success", file: "valid_legacy.json", sso: []reply{tooManyRequests, roleCredentialsOK}},
		{name: "GetRoleCredentials 429 without a throttling code is not retried", file: "valid_legacy.json",
			sso: []reply{{status: 429, body: `{}`}, roleCredentialsOK}, wantErr: true},
		{name: "GetRoleCredentials 501 is not retried", file: "valid_legacy.json", sso: []reply{{status: 501, body: `{}`}, roleCredentialsOK}, wantErr: true},
		{name: "GetRoleCredentials 503 without a body is retried", file: "valid_legacy.json", sso: []reply{{status: 503}, roleCredentialsOK}},
		{name: "GetRoleCredentials answer without expiration", file: "valid_legacy.json",
			sso: []reply{{status: 200, body: `{"roleCredentials":{"accessKeyId":"AKID","secretAccessKey":"s"}}`}}},
		{name: "GetRoleCredentials expiration in exponent form is refused", file: "valid_legacy.json",
			sso: []reply{{status: 200, body: `{"roleCredentials":{"accessKeyId":"AKID","secretAccessKey":"s","expiration":1.7e12}}`}}, wantErr: true},
		{name: "GetRoleCredentials expiration with a fraction is refused", file: "valid_legacy.json",
			sso: []reply{{status: 200, body: `{"roleCredentials":{"accessKeyId":"AKID","secretAccessKey":"s","expiration":1700000000000.75}}`}}, wantErr: true},
		{name: "GetRoleCredentials expiration a string is refused", file: "valid_legacy.json",
			sso: []reply{{status: 200, body: `{"roleCredentials":{"accessKeyId":"AKID","secretAccessKey":"s","expiration":"1700000000000"}}`}}, wantErr: true},
		{name: "GetRoleCredentials 502 with an HTML body is retried", file: "valid_legacy.json",
			sso: []reply{{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: `<html>bad gateway</html>`}, roleCredentialsOK}},
		{name: "GetRoleCredentials 400 RequestTimeoutException is retried", file: "valid_legacy.json",
			sso: []reply{{status: 400, body: `{"code":"RequestTimeoutException","message":"slow"}`}, roleCredentialsOK}},
		{name: "GetRoleCredentials answer not JSON", file: "valid_legacy.json", sso: []reply{{status: 200, body: `{"roleCredentials":`}}, wantErr: true},
		// sso-session profiles: the token provider, refreshing an expired token.
		{name: "session valid token, no refresh", session: true, file: "valid.json", sso: ok, oidc: []reply{createTokenOK}},
		{name: "session expired token refreshed", session: true, file: "expired.json", sso: ok, oidc: []reply{createTokenOK}},
		{name: "session refresh without a new refresh token drops it", session: true, file: "expired.json", sso: ok,
			oidc: []reply{{status: 200, body: `{"accessToken":"new-access","expiresIn":3600}`}}},
		{name: "session refresh refused (invalid_grant) is not retried", session: true, file: "expired.json", sso: ok,
			oidc: []reply{invalidGrant, createTokenOK}, wantErr: true, errHas: []string{"InvalidGrantException"}},
		{name: "session refresh AccessDeniedException with the clocks an hour apart is retried", session: true, file: "expired.json", sso: ok,
			oidc: []reply{{status: 400, header: map[string]string{"Date": time.Now().Add(time.Hour).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")},
				body: `{"__type":"AccessDeniedException","error":"access_denied"}`}, createTokenOK}},
		{name: "session refresh 500 three times", session: true, file: "expired.json", sso: ok, oidc: []reply{serverError}, wantErr: true},
		{name: "session refresh 500 then success", session: true, file: "expired.json", sso: ok, oidc: []reply{serverError, createTokenOK}},
		{name: "session refresh answer not JSON", session: true, file: "expired.json", sso: ok,
			oidc: []reply{{status: 200, body: `{"accessToken":`}}, wantErr: true},
		{name: "session refresh expiresIn with a fraction is refused", session: true, file: "expired.json", sso: ok,
			oidc: []reply{{status: 200, body: `{"accessToken":"new-access","expiresIn":3600.5,"refreshToken":"new-refresh"}`}}, wantErr: true},
		{name: "session refresh answer without an access token", session: true, file: "expired.json", sso: ok,
			oidc: []reply{{status: 200, body: `{"expiresIn":3600,"refreshToken":"new-refresh"}`}}},
		{name: "session expired without a refresh token, nothing sent", session: true, file: "expired_no_refresh.json", sso: ok,
			oidc: []reply{createTokenOK}, wantErr: true},
		{name: "session expired without a client id, nothing sent", session: true, file: "expired_no_client.json", sso: ok,
			oidc: []reply{createTokenOK}, wantErr: true},
		{name: "session registration expired is still tried", session: true, file: "expired_registration.json", sso: ok,
			oidc: []reply{invalidClient}, wantErr: true, errHas: []string{"InvalidClientException"}},
		{name: "session missing cache file", session: true, sso: ok, oidc: []reply{createTokenOK}, wantErr: true},
		{name: "session malformed cache file", session: true, file: "malformed.json", sso: ok, wantErr: true},
		{name: "session refreshed file keeps mode 0640", session: true, file: "expired.json", mode: 0o640, sso: ok, oidc: []reply{createTokenOK}},
		{name: "session refreshed then GetRoleCredentials 401", session: true, file: "expired.json", sso: []reply{unauthorized},
			oidc: []reply{createTokenOK}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sdk := retrieve(t, c, true, context.Background())
			ours := retrieve(t, c, false, context.Background())
			compareOutcomes(t, c, sdk, ours)
			if c.mode != 0 && ours.mode.Perm() != c.mode {
				t.Errorf("mode after the refresh %v, want %v", ours.mode.Perm(), c.mode)
			}
		})
	}
}

// TestLegacyExpiredTokenIsAnInvalidSession pins the error's kind, which
// the SDK exports as InvalidTokenError and callers test for.
func TestLegacyExpiredTokenIsAnInvalidSession(t *testing.T) {
	o := retrieve(t, credsCase{file: "expired.json", sso: []reply{roleCredentialsOK}}, false, context.Background())
	var invalid *invalidTokenError
	if !errors.As(o.err, &invalid) {
		t.Fatalf("error %v is not an invalid-token error", o.err)
	}
}

// TestServiceErrorIsAnAPIError pins that a service's error answer reads as
// smithy.APIError, with the service's code and message, as the SDK's.
func TestServiceErrorIsAnAPIError(t *testing.T) {
	o := retrieve(t, credsCase{file: "valid_legacy.json", sso: []reply{unauthorized}}, false, context.Background())
	var apiErr smithy.APIError
	if !errors.As(o.err, &apiErr) {
		t.Fatalf("error %v is not a smithy.APIError", o.err)
	}
	if apiErr.ErrorCode() != "UnauthorizedException" || apiErr.ErrorMessage() != "Session token not found or invalid" {
		t.Errorf("code %q message %q", apiErr.ErrorCode(), apiErr.ErrorMessage())
	}
}

// TestErrorsCarryNoSecret pins that no token or client secret of the cache
// file or of the answers reaches an error.
func TestErrorsCarryNoSecret(t *testing.T) {
	cases := []credsCase{
		{session: true, file: "expired.json", oidc: []reply{invalidGrant}},
		{session: true, file: "expired.json", oidc: []reply{createTokenOK}, sso: []reply{unauthorized}},
		{file: "expired.json"},
		{file: "valid_legacy.json", sso: []reply{serverError}},
		{file: "number_access.json"},
	}
	secrets := []string{"old-access", "cached-refresh", "csecret", "new-access", "new-refresh", "legacy-access", "cached-access"}
	for _, c := range cases {
		o := retrieve(t, c, false, context.Background())
		if o.err == nil {
			t.Fatalf("%s: no error", c.file)
		}
		for _, s := range secrets {
			if strings.Contains(o.err.Error(), s) {
				t.Errorf("error %q holds the secret %q", o.err, s)
			}
		}
	}
}

// TestCancelledContextSendsNothing runs both with a context already
// cancelled: both fail and neither service is reached.
func TestCancelledContextSendsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []credsCase{
		{name: "legacy", file: "valid_legacy.json", sso: []reply{roleCredentialsOK}, wantErr: true},
		{name: "session refresh", session: true, file: "expired.json", sso: []reply{roleCredentialsOK}, oidc: []reply{createTokenOK}, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdk := retrieve(t, c, true, ctx)
			ours := retrieve(t, c, false, ctx)
			compareOutcomes(t, c, sdk, ours)
			if !errors.Is(ours.err, context.Canceled) {
				t.Errorf("error %v is not context.Canceled", ours.err)
			}
		})
	}
}

// TestCancelDuringBackoffStopsRetrying cancels the context in the wait
// after a failed attempt: no further attempt is sent.
func TestCancelDuringBackoffStopsRetrying(t *testing.T) {
	homeWithToken(t, startURL, fixture(t, "valid_legacy.json"), 0o600)
	f := newFake(t, serverError)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := ourClient(f)
	c.Backoff = func(int) time.Duration { cancel(); return 0 }
	_, err := NewCredentials(c, CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL}).Retrieve(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests sent, want 1", n)
	}
}

// TestMaxAttemptsIsHonoured pins that the chain's max_attempts bounds the
// attempts, as the SDK's RetryMaxAttempts does.
func TestMaxAttemptsIsHonoured(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		homeWithToken(t, startURL, fixture(t, "valid_legacy.json"), 0o600)
		f := newFake(t, serverError)
		c := ourClient(f)
		c.MaxAttempts = n
		_, err := NewCredentials(c, CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL}).Retrieve(context.Background())
		if err == nil {
			t.Fatalf("max %d: no error", n)
		}
		if got := len(f.requests()); got != n {
			t.Errorf("max %d: %d requests", n, got)
		}
	}
}

// TestConnectionRefusedIsRetried pins that a connection error is retried
// up to the attempts, as the SDK's RetryableConnectionError.
func TestConnectionRefusedIsRetried(t *testing.T) {
	homeWithToken(t, startURL, fixture(t, "valid_legacy.json"), 0o600)
	f := newFake(t, roleCredentialsOK)
	endpoint := f.srv.URL
	f.srv.Close() // nothing listens there now
	var waits int
	c := Client{Endpoint: endpoint, Backoff: func(int) time.Duration { waits++; return 0 }}
	_, err := NewCredentials(c, CredentialsOptions{AccountID: accountID, RoleName: roleName, StartURL: startURL}).Retrieve(context.Background())
	if err == nil {
		t.Fatal("no error")
	}
	if waits != 2 {
		t.Errorf("%d retries, want 2", waits)
	}
}

// TestEndpointWithAPathIsTheSDKs pins where the operations go when the
// configured endpoint has a path, with and without a trailing slash, and
// a query or fragment (dropped, as the SDK drops them).
func TestEndpointWithAPathIsTheSDKs(t *testing.T) {
	for _, suffix := range []string{"/prefix", "/prefix/", "/", "/prefix?tenant=a", "/?role_name=x#top"} {
		t.Run(suffix, func(t *testing.T) {
			var got [2][]seen
			for i, sdk := range []bool{true, false} {
				path := homeWithToken(t, sessionName, fixture(t, "expired.json"), 0o600)
				fs, fo := newFake(t, roleCredentialsOK), newFake(t, createTokenOK)
				var p aws.CredentialsProvider
				if sdk {
					s := sso.New(sso.Options{Region: "us-west-2", BaseEndpoint: aws.String(fs.srv.URL + suffix), HTTPClient: fs.srv.Client()})
					o := ssooidc.New(ssooidc.Options{Region: "us-west-2", BaseEndpoint: aws.String(fo.srv.URL + suffix), HTTPClient: fo.srv.Client()})
					p = ssocreds.New(s, accountID, roleName, startURL, func(op *ssocreds.Options) {
						op.SSOTokenProvider = ssocreds.NewSSOTokenProvider(o, path)
					})
				} else {
					s, o := ourClient(fs), ourClient(fo)
					s.Endpoint += suffix
					o.Endpoint += suffix
					p = NewCredentials(s, CredentialsOptions{AccountID: accountID, RoleName: roleName, TokenProvider: NewTokenProvider(o, path)})
				}
				if _, err := p.Retrieve(context.Background()); err != nil {
					t.Fatalf("sdk %v: %v", sdk, err)
				}
				got[i] = append(fo.requests(), fs.requests()...)
			}
			if d := cmp.Diff(got[0], got[1]); d != "" {
				t.Errorf("requests (-SDK +ours):\n%s", d)
			}
		})
	}
}
