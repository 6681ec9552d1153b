package awssso

// The harness that holds this package to the AWS SDK's ssocreds: a
// loopback fake of SSO and SSO-OIDC that records what it is sent and
// answers from a script, the SDK's sso/ssooidc clients pointed at it
// without sleeping between retries, and this package's Clients likewise.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sso"
	"github.com/aws/aws-sdk-go-v2/service/ssooidc"
)

// seen is what the fake kept of a request: what either side must send alike.
type seen struct {
	Method, Path, Query string
	BearerHeader        string // x-amz-sso_bearer_token
	ContentType         string
	Body                map[string]any // the JSON body, nil when empty
}

// reply is one scripted answer.
type reply struct {
	status int
	header map[string]string
	body   string
}

// fake is a loopback SSO + SSO-OIDC: it answers the script in order, the
// last answer repeating, and records every request.
type fake struct {
	srv *httptest.Server

	mu     sync.Mutex
	script []reply
	got    []seen
}

func newFake(t *testing.T, script ...reply) *fake {
	t.Helper()
	f := &fake{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s := seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		BearerHeader: r.Header.Get("X-Amz-Sso_bearer_token"), ContentType: r.Header.Get("Content-Type")}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &s.Body); err != nil {
			s.Body = map[string]any{"<not JSON>": string(b)}
		}
	}
	f.mu.Lock()
	f.got = append(f.got, s)
	var a reply
	if n := len(f.got); n <= len(f.script) {
		a = f.script[n-1]
	} else if len(f.script) > 0 {
		a = f.script[len(f.script)-1]
	} else {
		a = reply{status: 599, body: "unscripted"}
	}
	f.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// requests is what the fake has been sent so far.
func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.got...)
}

// noWait is a backoff of zero, for the SDK's retryer.
var noWait = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })

// sdkRetryer is the SDK's standard retryer without its waits.
func sdkRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) { o.Backoff = noWait })
}

// sdkSSO is the SDK's SSO client pointed at f.
func sdkSSO(f *fake) *sso.Client {
	return sso.New(sso.Options{Region: "us-west-2", BaseEndpoint: aws.String(f.srv.URL),
		HTTPClient: f.srv.Client(), Retryer: sdkRetryer()})
}

// sdkOIDC is the SDK's SSO-OIDC client pointed at f.
func sdkOIDC(f *fake) *ssooidc.Client {
	return ssooidc.New(ssooidc.Options{Region: "us-west-2", BaseEndpoint: aws.String(f.srv.URL),
		HTTPClient: f.srv.Client(), Retryer: sdkRetryer()})
}

// ourClient is this package's Client pointed at f, without waits.
func ourClient(f *fake) Client {
	return Client{HTTPClient: f.srv.Client(), Endpoint: f.srv.URL, Backoff: func(int) time.Duration { return 0 }}
}

// fixture is the bytes of testdata/name.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// homeWithToken points HOME at a new temp dir holding content (unless
// nil) at CachedTokenFilepath(key) with mode, and returns that path.
func homeWithToken(t *testing.T, key string, content []byte, mode os.FileMode) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	path, err := CachedTokenFilepath(key)
	if err != nil {
		t.Fatal(err)
	}
	if content == nil {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}

// Scripted answers used by several tests.
var (
	roleCredentialsOK = reply{status: 200, body: `{"roleCredentials":{"accessKeyId":"AKIDSSO","secretAccessKey":"sso-secret","sessionToken":"sso-session-token","expiration":4102444800123}}`}
	createTokenOK     = reply{status: 200, body: `{"accessToken":"new-access","expiresIn":3600,"refreshToken":"new-refresh","tokenType":"Bearer"}`}
	serverError       = reply{status: 500, body: `{"__type":"InternalServerException","message":"try again"}`}
	unauthorized      = reply{status: 401, header: map[string]string{"X-Amzn-Errortype": "UnauthorizedException:http://internal.amazon.com/coral/"},
		body: `{"message":"Session token not found or invalid"}`}
	invalidGrant = reply{status: 400, header: map[string]string{"X-Amzn-Errortype": "InvalidGrantException"},
		body: `{"error":"invalid_grant","error_description":"Invalid refresh token provided"}`}
	invalidClient = reply{status: 400, header: map[string]string{"X-Amzn-Errortype": "InvalidClientException"},
		body: `{"error":"invalid_client","error_description":"Client registration has expired"}`}
	tooManyRequests = reply{status: 429, body: `{"__type":"TooManyRequestsException","message":"slow down"}`}
)
