package awsconfig

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAWS is one loopback server playing every AWS endpoint the chain may
// reach — STS, SSO, SSO OIDC, sign-in, the instance metadata service and
// a container's credentials endpoint — answering credentials that say
// where they came from and with what (an assumed role's key names the key
// that signed for it), and logging each request it saw in a form two
// loaders can be compared by.
type fakeAWS struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []string
	// stsError, when set, is the STS error code every STS call answers.
	stsError string
}

// expiry is every expiring credential's end, far off so that no cache
// refreshes during a test.
var expiry = time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)

func newFakeAWS(t *testing.T) *fakeAWS {
	f := &fakeAWS{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAWS) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

// take returns the log and empties it.
func (f *fakeAWS) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.log
	f.log = nil
	return l
}

var defaultSessionName = regexp.MustCompile(`^(aws-go-sdk-)?[0-9]{10,}$`)

var credentialOfAuthorization = regexp.MustCompile(`Credential=([^/]+)/[0-9]{8}/([^/]+)/([^/]+)/aws4_request`)

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded"):
		f.sts(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/federation/credentials":
		f.sso(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		f.oidc(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/token":
		f.signin(w, r)
	case strings.HasPrefix(r.URL.Path, "/latest/"):
		f.imds(w, r)
	case r.URL.Path == "/container":
		f.record("container auth=%q", r.Header.Get("Authorization"))
		writeJSON(w, map[string]any{"AccessKeyId": "CONTAINER-" + r.Header.Get("Authorization"), "SecretAccessKey": "s", "Token": "t", "Expiration": expiry.Format(time.RFC3339)})
	default:
		f.record("unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "not a fake AWS endpoint", http.StatusNotFound)
	}
}

func (f *fakeAWS) sts(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var keys []string
	for k := range r.PostForm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fields []string
	for _, k := range keys {
		v := r.PostForm.Get(k)
		if k == "RoleSessionName" {
			// the SDK's default names hold the time
			v = defaultSessionName.ReplaceAllString(v, "${1}*")
		}
		fields = append(fields, k+"="+v)
	}
	signer := ""
	if m := credentialOfAuthorization.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		signer = m[1] + " " + m[2] + " " + m[3]
	}
	f.record("sts %s signed-by=%q token=%q", strings.Join(fields, "&"), signer, r.Header.Get("X-Amz-Security-Token"))
	if f.stsError != "" {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>not for you</Message></Error><RequestId>r</RequestId></ErrorResponse>`, f.stsError)
		return
	}
	action := r.PostForm.Get("Action")
	key := "STS-" + r.PostForm.Get("RoleArn")
	if action == "AssumeRoleWithWebIdentity" {
		key += "-WEB-" + r.PostForm.Get("WebIdentityToken")
	} else if m := credentialOfAuthorization.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		key += "-BY-" + m[1]
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<%[1]sResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><%[1]sResult><Credentials><AccessKeyId>%[2]s</AccessKeyId><SecretAccessKey>secret</SecretAccessKey><SessionToken>session</SessionToken><Expiration>%[3]s</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser></%[1]sResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></%[1]sResponse>`,
		action, xmlEscape(key), expiry.Format(time.RFC3339))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func (f *fakeAWS) sso(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("X-Amz-Sso_bearer_token")
	q := r.URL.Query()
	f.record("sso role=%s account=%s token=%q", q.Get("role_name"), q.Get("account_id"), token)
	if strings.HasPrefix(token, "revoked") {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "UnauthorizedException")
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"message": "Session token not found or invalid"})
		return
	}
	writeJSON(w, map[string]any{"roleCredentials": map[string]any{
		"accessKeyId": "SSO-" + token + "-" + q.Get("role_name"), "secretAccessKey": "s", "sessionToken": "t",
		"expiration": expiry.UnixMilli(),
	}})
}

func (f *fakeAWS) oidc(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.record("oidc grant=%v client=%v refresh=%v", body["grantType"], body["clientId"], body["refreshToken"])
	writeJSON(w, map[string]any{"accessToken": fmt.Sprintf("refreshed-%v", body["refreshToken"]), "expiresIn": 3600, "refreshToken": "next-refresh", "tokenType": "Bearer"})
}

func (f *fakeAWS) signin(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.record("signin grant=%v client=%v refresh=%v dpop=%v", body["grantType"], body["clientId"], body["refreshToken"], r.Header.Get("DPoP") != "")
	writeJSON(w, map[string]any{"accessToken": map[string]any{"accessKeyId": fmt.Sprintf("LOGIN-%v", body["refreshToken"]), "secretAccessKey": "s", "sessionToken": "t"},
		"expiresIn": 900, "refreshToken": "next-refresh", "tokenType": "aws_sigv4"})
}

func (f *fakeAWS) imds(w http.ResponseWriter, r *http.Request) {
	f.record("imds %s %s", r.Method, r.URL.Path)
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
		fmt.Fprint(w, "imds-token")
	case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
		fmt.Fprint(w, "the-role")
	case r.URL.Path == "/latest/meta-data/iam/security-credentials/the-role":
		// under the hour to which ec2rolecreds caps what it is given
		writeJSON(w, map[string]any{"Code": "Success", "AccessKeyId": "IMDS", "SecretAccessKey": "s", "Token": "t",
			"Expiration": time.Now().Add(40 * time.Minute).UTC().Format(time.RFC3339)})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	_ = json.NewEncoder(w).Encode(v)
}
