package awsconfig

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// environment is one setting a loader is run in: files under a fresh
// directory (which is HOME) and variables; in both, {{URL}} is the fake
// AWS's address and {{DIR}} the directory.
type environment struct {
	name  string
	files map[string]string
	env   map[string]string
	// stsError, when set, is the error code the fake STS answers.
	stsError string
}

// fakeEndpoints points every service the chain may reach at the fake:
// what each environment starts from unless it says otherwise.
//
// The files are named by variable too: the SDK finds its default files
// under the HOME the process started with (config's package state), not
// under a test's (ours reads HOME at each load: awsprofile's tests hold
// the default names).
var fakeEndpoints = map[string]string{
	"AWS_CONFIG_FILE":                   "{{DIR}}/.aws/config",
	"AWS_SHARED_CREDENTIALS_FILE":       "{{DIR}}/.aws/credentials",
	"AWS_ENDPOINT_URL_STS":              "{{URL}}",
	"AWS_ENDPOINT_URL_SSO":              "{{URL}}",
	"AWS_ENDPOINT_URL_SSO_OIDC":         "{{URL}}",
	"AWS_ENDPOINT_URL_SIGNIN":           "{{URL}}",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT": "{{URL}}",
}

// ssoCache is the cache file name of an SSO session or legacy start URL.
func ssoCache(key string) string {
	sum := sha1.Sum([]byte(key))
	return ".aws/sso/cache/" + hex.EncodeToString(sum[:]) + ".json"
}

// loginCache is the cache file name of an `aws login` session.
func loginCache(session string) string {
	sum := sha256.Sum256([]byte(session))
	return ".aws/login/cache/" + hex.EncodeToString(sum[:]) + ".json"
}

const (
	validToken   = `{"accessToken":"cached","expiresAt":"2099-01-01T00:00:00Z","region":"us-east-1","startUrl":"https://start"}`
	expiredToken = `{"accessToken":"stale","expiresAt":"2001-01-01T00:00:00Z","region":"us-east-1","startUrl":"https://start"}`
	// refreshable is an expired token of an sso-session with what SSO
	// OIDC needs to refresh it.
	refreshable = `{"accessToken":"stale","expiresAt":"2001-01-01T00:00:00Z","refreshToken":"the-refresh","clientId":"cid","clientSecret":"csecret","registrationExpiresAt":"2099-01-01T00:00:00Z","region":"us-east-1","startUrl":"https://start"}`
)

var environments = []environment{
	{name: "keys in the environment", env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "s"}},
	{name: "keys, session token and account in the environment", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok", "AWS_ACCOUNT_ID": "111122223333"}},
	{name: "the old names of the key variables", env: map[string]string{"AWS_ACCESS_KEY": "AKOLD", "AWS_SECRET_KEY": "s"}},
	{name: "keys in the environment win over AWS_PROFILE", files: map[string]string{".aws/credentials": "[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = s\n"},
		env: map[string]string{"AWS_PROFILE": "dev", "AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "s"}},
	{name: "a profile AWS_PROFILE names that does not exist", env: map[string]string{"AWS_PROFILE": "nope"}},
	{name: "a profile AWS_DEFAULT_PROFILE names that does not exist", env: map[string]string{"AWS_DEFAULT_PROFILE": "nope"}},
	{name: "default keys in the credentials file", files: map[string]string{".aws/credentials": "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = s\n", ".aws/config": "[default]\nregion = ap-south-1\n"}},
	{name: "default keys in the config file", files: map[string]string{".aws/config": "[default]\naws_access_key_id = AKCONF\naws_secret_access_key = s\nregion = us-west-2\n"}},
	{name: "the credentials file overrides the config file", files: map[string]string{
		".aws/config":      "[default]\naws_access_key_id = AKCONF\naws_secret_access_key = s1\naws_session_token = tc\n",
		".aws/credentials": "[default]\naws_access_key_id = AKCRED\naws_secret_access_key = s2\n"}},
	{name: "a named profile in the config file", files: map[string]string{".aws/config": "[profile dev]\naws_access_key_id = AKDEV\naws_secret_access_key = s\nregion = eu-central-1\n"},
		env: map[string]string{"AWS_PROFILE": "dev"}},
	{name: "a named profile without the profile prefix in the config file", files: map[string]string{".aws/config": "[dev]\naws_access_key_id = AKDEV\naws_secret_access_key = s\n"},
		env: map[string]string{"AWS_PROFILE": "dev"}},
	{name: "files named by the environment", files: map[string]string{"conf": "[profile x]\nregion = sa-east-1\n", "creds": "[x]\naws_access_key_id = AKX\naws_secret_access_key = s\n"},
		env: map[string]string{"AWS_PROFILE": "x", "AWS_CONFIG_FILE": "{{DIR}}/conf", "AWS_SHARED_CREDENTIALS_FILE": "{{DIR}}/creds"}},
	{name: "the region of the environment over the profile's", files: map[string]string{".aws/config": "[default]\nregion = us-west-2\naws_access_key_id = AK\naws_secret_access_key = s\n"},
		env: map[string]string{"AWS_DEFAULT_REGION": "eu-north-1"}},
	{name: "a role assumed with a source profile's keys", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AKSRC\naws_secret_access_key = s\naws_session_token = srctoken\n[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = src\nregion = us-east-2\n"},
		env: map[string]string{"AWS_PROFILE": "dev"}},
	{name: "a chain of two assumed roles", files: map[string]string{".aws/config": "[profile a]\naws_access_key_id = AKA\naws_secret_access_key = s\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n[profile c]\nrole_arn = arn:aws:iam::1:role/c\nsource_profile = b\nrole_session_name = mine\nexternal_id = ext\n"},
		env: map[string]string{"AWS_PROFILE": "c", "AWS_REGION": "us-east-1"}},
	{name: "a profile that is its own source", files: map[string]string{".aws/config": "[profile self]\naws_access_key_id = AKSELF\naws_secret_access_key = s\nrole_arn = arn:aws:iam::1:role/self\nsource_profile = self\n"},
		env: map[string]string{"AWS_PROFILE": "self", "AWS_REGION": "us-east-1"}},
	{name: "source profiles in a cycle", files: map[string]string{".aws/config": "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n"},
		env: map[string]string{"AWS_PROFILE": "a", "AWS_REGION": "us-east-1"}},
	{name: "a source profile that does not exist", files: map[string]string{".aws/config": "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = gone\n"},
		env: map[string]string{"AWS_PROFILE": "a", "AWS_REGION": "us-east-1"}},
	{name: "a role's duration over and under fifteen minutes", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AK\naws_secret_access_key = s\n[profile long]\nrole_arn = arn:aws:iam::1:role/l\nsource_profile = src\nduration_seconds = 3600\n[profile short]\nrole_arn = arn:aws:iam::1:role/s\nsource_profile = long\nduration_seconds = 600\n"},
		env: map[string]string{"AWS_PROFILE": "short", "AWS_REGION": "us-east-1"}},
	{name: "a role that needs an MFA code", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AK\naws_secret_access_key = s\n[profile mfa]\nrole_arn = arn:aws:iam::1:role/m\nsource_profile = src\nmfa_serial = arn:aws:iam::1:mfa/me\n"},
		env: map[string]string{"AWS_PROFILE": "mfa", "AWS_REGION": "us-east-1"}},
	{name: "STS refusing the role", stsError: "AccessDenied", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AK\naws_secret_access_key = s\n[profile dev]\nrole_arn = arn:aws:iam::1:role/d\nsource_profile = src\n"},
		env: map[string]string{"AWS_PROFILE": "dev", "AWS_REGION": "us-east-1"}},
	{name: "a role with credential_source Environment and no keys", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Environment\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1"}},
	{name: "a role with credential_source Ec2InstanceMetadata", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Ec2InstanceMetadata\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1"}},
	{name: "a role with credential_source EcsContainer", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = EcsContainer\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "{{URL}}/container", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ctok"}},
	{name: "credential_source EcsContainer without a container", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = EcsContainer\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1"}},
	{name: "an unknown credential_source", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Moon\n"},
		env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1"}},
	{name: "a role alone is assumed with the instance's", files: map[string]string{".aws/config": "[profile r]\nrole_arn = arn:aws:iam::1:role/r\n"},
		env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "web identity in the environment", files: map[string]string{"token": "the-jwt"},
		env: map[string]string{"AWS_REGION": "us-east-1", "AWS_WEB_IDENTITY_TOKEN_FILE": "{{DIR}}/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/w", "AWS_ROLE_SESSION_NAME": "pod"}},
	{name: "web identity in the environment without a role", files: map[string]string{"token": "the-jwt"},
		env: map[string]string{"AWS_REGION": "us-east-1", "AWS_WEB_IDENTITY_TOKEN_FILE": "{{DIR}}/token"}},
	{name: "web identity with a missing token file", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_WEB_IDENTITY_TOKEN_FILE": "{{DIR}}/gone", "AWS_ROLE_ARN": "arn:aws:iam::1:role/w"}},
	{name: "web identity in a profile", files: map[string]string{"token": "jwt2", ".aws/config": "[profile w]\nrole_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = {{DIR}}/token\nregion = us-west-1\n"},
		env: map[string]string{"AWS_PROFILE": "w"}},
	{name: "credential_process", files: map[string]string{"creds.sh": `echo '{"Version":1,"AccessKeyId":"AKPROC","SecretAccessKey":"s","SessionToken":"t","Expiration":"2099-01-02T03:04:05Z"}'`,
		".aws/config": "[default]\ncredential_process = /bin/sh {{DIR}}/creds.sh\n"}},
	{name: "a container's endpoint with a token", env: map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "{{URL}}/container", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ctok"}},
	{name: "a container's endpoint with a token file", files: map[string]string{"ctoken": "from-file"},
		env: map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "{{URL}}/container", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "{{DIR}}/ctoken"}},
	{name: "a container's endpoint in the clear elsewhere", env: map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://10.1.2.3/creds"}},
	{name: "the instance's role when nothing else is set", env: map[string]string{"AWS_REGION": "us-east-1"}},
	{name: "the instance's metadata disabled", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}},
	{name: "a legacy SSO profile with a valid token", files: map[string]string{ssoCache("https://start"): validToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-east-1\nsso_account_id = 111\nsso_role_name = Dev\nregion = eu-west-1\n"},
		env: map[string]string{"AWS_PROFILE": "s"}},
	{name: "a legacy SSO profile with an expired token", files: map[string]string{ssoCache("https://start"): expiredToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-east-1\nsso_account_id = 111\nsso_role_name = Dev\n"},
		env: map[string]string{"AWS_PROFILE": "s"}},
	{name: "an SSO session with a valid token", files: map[string]string{ssoCache("corp"): validToken,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "an SSO session's expired token refreshed", files: map[string]string{ssoCache("corp"): refreshable,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "an SSO session's revoked token", files: map[string]string{ssoCache("corp"): strings.Replace(validToken, "cached", "revoked", 1),
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "an SSO session's bearer token preferred", files: map[string]string{ssoCache("corp"): validToken,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\nauth_scheme_preference = httpBearerAuth, sigv4\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "an SSO profile whose session is missing", files: map[string]string{".aws/config": "[profile s]\nsso_session = gone\nsso_account_id = 111\nsso_role_name = Dev\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "aws login's valid credentials", files: map[string]string{loginCache("arn:aws:iam::123456789012:user/me"): "testdata/login-valid.json",
		".aws/config": "[profile l]\nlogin_session = arn:aws:iam::123456789012:user/me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l"}},
	{name: "aws login's expired credentials refreshed", files: map[string]string{loginCache("arn:aws:iam::123456789012:user/me"): "testdata/login-expired.json",
		".aws/config": "[profile l]\nlogin_session = arn:aws:iam::123456789012:user/me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l"}},
	{name: "aws login's cache in AWS_LOGIN_CACHE_DIRECTORY", files: map[string]string{"login/" + filepath.Base(loginCache("me")): "testdata/login-valid.json",
		".aws/config": "[profile l]\nlogin_session = me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l", "AWS_LOGIN_CACHE_DIRECTORY": "{{DIR}}/login"}},
	{name: "aws login without its cache", files: map[string]string{".aws/config": "[profile l]\nlogin_session = me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l"}},
	{name: "the auth scheme preference of the environment", env: map[string]string{"AWS_AUTH_SCHEME_PREFERENCE": "sigv4a,  sigv4", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "s"}},
	{name: "STS at the profile's services section", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AK\naws_secret_access_key = s\n[profile dev]\nrole_arn = arn:aws:iam::1:role/d\nsource_profile = src\nservices = mine\n[services mine]\nsts =\n  endpoint_url = {{URL}}\n"},
		env: map[string]string{"AWS_PROFILE": "dev", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_STS": ""}},
	{name: "a malformed AWS_MAX_ATTEMPTS", env: map[string]string{"AWS_MAX_ATTEMPTS": "many"}},
	{name: "a missing CA bundle", env: map[string]string{"AWS_CA_BUNDLE": "{{DIR}}/no-such.pem", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "s"}},
	{name: "a CA bundle without a certificate", files: map[string]string{"ca.pem": "not a certificate\n"}, env: map[string]string{"AWS_CA_BUNDLE": "{{DIR}}/ca.pem", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "s"}},
}

// loaded is what one loader made of an environment.
type loaded struct {
	err        error
	region     string
	preference []string
	creds      aws.Credentials
	credsErr   error
	hasCreds   bool
	bearer     string
	bearerErr  error
	hasBearer  bool
	requests   []string
	// baseEndpoint is the configuration's BaseEndpoint, "<nil>" for none.
	baseEndpoint string
}

func TestTheChainLoadsWhatTheSDKsLoadDefaultConfigLoads(t *testing.T) {
	for _, e := range append(environments, moreEnvironments...) {
		t.Run(e.name, func(t *testing.T) {
			fake := newFakeAWS(t)
			fake.stsError = e.stsError
			dir := t.TempDir()
			setEnvironment(t, e, fake.srv.URL, dir)

			sdk := load(t, e, fake, dir, func(ctx context.Context) (aws.Config, error) { return config.LoadDefaultConfig(ctx) })
			ours := load(t, e, fake, dir, Load)
			compare(t, sdk, ours)
		})
	}
}

// setEnvironment clears every AWS variable, then sets e's over the fake's
// endpoints.
func setEnvironment(t *testing.T, e environment, url, dir string) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("HOME", dir)
	vars := map[string]string{}
	for k, v := range fakeEndpoints {
		vars[k] = v
	}
	for k, v := range e.env {
		vars[k] = v
	}
	for k, v := range vars {
		if v == "" {
			continue // the environment says: unset
		}
		t.Setenv(k, expand(v, url, dir))
	}
}

func expand(s, url, dir string) string {
	return strings.NewReplacer("{{URL}}", url, "{{DIR}}", dir).Replace(s)
}

// load writes e's files afresh (a refresh by the other loader must not
// change what this one reads), runs loadFn, retrieves what it loaded and
// returns it with the requests the fake saw.
func load(t *testing.T, e environment, fake *fakeAWS, dir string, loadFn func(context.Context) (aws.Config, error)) loaded {
	t.Helper()
	for _, old := range []string{".aws", "login", "token", "ctoken", "conf", "creds", "creds.sh", "ca.pem"} {
		os.RemoveAll(filepath.Join(dir, old))
	}
	for name, content := range e.files {
		if strings.HasPrefix(content, "testdata/") {
			b, err := os.ReadFile(content)
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
			// the login caches' DPoP key, as a JSON string
			key, err := os.ReadFile("testdata/login-key.pem")
			if err != nil {
				t.Fatal(err)
			}
			quoted, _ := json.Marshal(string(key))
			content = strings.ReplaceAll(content, `"@DPOPKEY@"`, string(quoted))
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(expand(content, fake.srv.URL, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fake.take()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var l loaded
	cfg, err := loadFn(ctx)
	l.err = err
	if err == nil {
		l.region, l.preference = cfg.Region, cfg.AuthSchemePreference
		l.baseEndpoint = "<nil>"
		if cfg.BaseEndpoint != nil {
			l.baseEndpoint = *cfg.BaseEndpoint
		}
		if cfg.Credentials != nil {
			l.hasCreds = true
			l.creds, l.credsErr = cfg.Credentials.Retrieve(ctx)
		}
		if cfg.BearerAuthTokenProvider != nil {
			l.hasBearer = true
			tok, err := cfg.BearerAuthTokenProvider.RetrieveBearerToken(ctx)
			l.bearer, l.bearerErr = tok.Value, err
		}
	}
	l.requests = fake.take()
	return l
}

func compare(t *testing.T, sdk, ours loaded) {
	t.Helper()
	if (sdk.err == nil) != (ours.err == nil) {
		t.Fatalf("loading: the SDK's error %v, ours %v", sdk.err, ours.err)
	}
	if sdk.err != nil {
		t.Logf("both refuse to load: SDK %q; ours %q", sdk.err, ours.err)
		return
	}
	if sdk.region != ours.region {
		t.Errorf("region: the SDK's %q, ours %q", sdk.region, ours.region)
	}
	if sdk.baseEndpoint != ours.baseEndpoint {
		t.Errorf("base endpoint: the SDK's %q, ours %q", sdk.baseEndpoint, ours.baseEndpoint)
	}
	if !slices.Equal(sdk.preference, ours.preference) {
		t.Errorf("auth scheme preference: the SDK's %q, ours %q", sdk.preference, ours.preference)
	}
	if sdk.hasCreds != ours.hasCreds {
		t.Fatalf("credentials provider: the SDK has one: %v, we have: %v", sdk.hasCreds, ours.hasCreds)
	}
	if (sdk.credsErr == nil) != (ours.credsErr == nil) {
		t.Errorf("retrieving credentials: the SDK's error %v, ours %v", sdk.credsErr, ours.credsErr)
	} else if sdk.credsErr != nil {
		t.Logf("both fail to retrieve: SDK %q; ours %q", sdk.credsErr, ours.credsErr)
	}
	a, b := sdk.creds, ours.creds
	if a.AccessKeyID != b.AccessKeyID || a.SecretAccessKey != b.SecretAccessKey || a.SessionToken != b.SessionToken ||
		a.CanExpire != b.CanExpire || a.AccountID != b.AccountID || a.Expires.Sub(b.Expires).Abs() > 2*time.Minute {
		t.Errorf("credentials:\n the SDK's %+v\n ours      %+v", redacted(a), redacted(b))
	}
	if sdk.hasBearer != ours.hasBearer || sdk.bearer != ours.bearer || (sdk.bearerErr == nil) != (ours.bearerErr == nil) {
		t.Errorf("bearer token: the SDK's %v %q %v, ours %v %q %v", sdk.hasBearer, sdk.bearer, sdk.bearerErr, ours.hasBearer, ours.bearer, ours.bearerErr)
	}
	if !slices.Equal(sdk.requests, ours.requests) {
		t.Errorf("requests:\n the SDK's %q\n ours      %q", sdk.requests, ours.requests)
	}
}

// redacted is c as a test may print it: fake values, but printed as the
// fields compared.
func redacted(c aws.Credentials) aws.Credentials {
	c.Source = ""
	return c
}
