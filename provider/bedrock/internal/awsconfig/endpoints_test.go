package awsconfig

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// connects records the hosts of the CONNECT requests a loopback proxy
// saw: where each loader sends at the default (unconfigured) endpoints,
// whose region and host no fake can see (the environments of
// compat_test.go point every service at the fake). Loopback (the fake)
// bypasses the proxy, so the other tests are unaffected.
var connects struct {
	sync.Mutex
	hosts []string
}

func takeConnects() []string {
	connects.Lock()
	defer connects.Unlock()
	h := connects.hosts
	connects.hosts = nil
	return h
}

func TestMain(m *testing.M) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			connects.Lock()
			connects.hosts = append(connects.hosts, r.Host)
			connects.Unlock()
		}
		http.Error(w, "no", http.StatusForbidden)
	}))
	// net/http reads the proxy variables once per process: before any request.
	os.Setenv("HTTPS_PROXY", proxy.URL)
	code := m.Run()
	proxy.Close()
	os.Exit(code)
}

var defaultEndpointEnvs = []environment{
	{name: "legacy SSO in eu-central-1, config in us-east-1", files: map[string]string{ssoCache("https://start"): validToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = eu-central-1\nsso_account_id = 111\nsso_role_name = Dev\nregion = us-east-1\n"}},
	{name: "SSO session refreshed in ap-southeast-2, config in us-west-2", files: map[string]string{ssoCache("corp"): refreshable,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\nregion = us-west-2\n[sso-session corp]\nsso_start_url = https://start\nsso_region = ap-southeast-2\n"}},
	{name: "web identity in cn-northwest-1", files: map[string]string{"token": "jwt",
		".aws/config": "[profile s]\nrole_arn = arn:aws-cn:iam::1:role/w\nweb_identity_token_file = {{DIR}}/token\nregion = cn-northwest-1\n"}},
	{name: "aws login with FIPS", files: map[string]string{loginCache("me"): "testdata/login-expired.json",
		".aws/config": "[profile s]\nlogin_session = me\nregion = us-east-1\nuse_fips_endpoint = true\n"}},
	// the SDK's STS client gets an empty base endpoint and sends nowhere:
	// an empty value is no reason to send to the public one
	{name: "an empty endpoint_url in the services section", files: map[string]string{
		".aws/config": "[profile src]\naws_access_key_id = AKSRC\naws_secret_access_key = s\n[profile s]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nregion = us-east-1\nservices = m\n[services m]\nsts =\n  endpoint_url =\n"}},
	{name: "a role in GovCloud over FIPS", files: map[string]string{
		".aws/config": keysSrc + "[profile s]\nrole_arn = arn:aws-us-gov:iam::1:role/r\nsource_profile = src\nregion = us-gov-west-1\nuse_fips_endpoint = true\n"}},
	{name: "a role over dual-stack", files: map[string]string{
		".aws/config": keysSrc + "[profile s]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nregion = eu-west-3\nuse_dualstack_endpoint = true\n"}},
	{name: "a role in aws-global", files: map[string]string{
		".aws/config": keysSrc + "[profile s]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nregion = aws-global\n"}},
	{name: "a legacy SSO profile in GovCloud over FIPS", files: map[string]string{ssoCache("https://start"): validToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-gov-east-1\nsso_account_id = 111\nsso_role_name = Dev\nuse_fips_endpoint = true\n"}},
	{name: "an SSO session's bearer token refreshed in the configuration's region", files: map[string]string{ssoCache("corp"): refreshable,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\nregion = ca-central-1\nauth_scheme_preference = httpBearerAuth\n[sso-session corp]\nsso_start_url = https://start\nsso_region = eu-west-2\n"}},
}

func TestTheChainReachesTheDefaultEndpointsTheSDKReaches(t *testing.T) {
	for _, e := range defaultEndpointEnvs {
		t.Run(e.name, func(t *testing.T) {
			fake := newFakeAWS(t)
			dir := t.TempDir()
			e.env = map[string]string{"AWS_PROFILE": "s", "AWS_MAX_ATTEMPTS": "1",
				"AWS_ENDPOINT_URL_STS": "", "AWS_ENDPOINT_URL_SSO": "", "AWS_ENDPOINT_URL_SSO_OIDC": "", "AWS_ENDPOINT_URL_SIGNIN": ""}
			setEnvironment(t, e, fake.srv.URL, dir)
			takeConnects()
			load(t, e, fake, dir, func(ctx context.Context) (aws.Config, error) { return config.LoadDefaultConfig(ctx) })
			sdkHosts := takeConnects()
			load(t, e, fake, dir, Load)
			if ourHosts := takeConnects(); !slices.Equal(sdkHosts, ourHosts) {
				t.Errorf("hosts reached: the SDK's %q, ours %q", sdkHosts, ourHosts)
			}
		})
	}
}
