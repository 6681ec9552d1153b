package bedrock

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// addressEnvironments are the environments (variables, and the lines of
// the shared config file's [profile p]) whose Bedrock address the wire
// must take from the AWS SDK's bedrockruntime client. "-" sets a
// variable to the empty string.
var addressEnvironments = []struct {
	name    string
	env     map[string]string
	profile string
}{
	{name: "plain", env: map[string]string{"AWS_REGION": "us-east-1"}},
	{name: "eu-west-1", env: map[string]string{"AWS_REGION": "eu-west-1"}},
	{name: "FIPS", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "use_fips_endpoint", profile: "region = us-west-2\nuse_fips_endpoint = true\n"},
	{name: "dual-stack", env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_USE_DUALSTACK_ENDPOINT": "true"}},
	{name: "use_dualstack_endpoint", profile: "region = ap-northeast-1\nuse_dualstack_endpoint = true\n"},
	{name: "FIPS and dual-stack", env: map[string]string{"AWS_REGION": "us-east-2", "AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "true"}},
	{name: "us-gov-west-1", env: map[string]string{"AWS_REGION": "us-gov-west-1"}},
	{name: "us-gov-west-1 over FIPS", env: map[string]string{"AWS_REGION": "us-gov-west-1", "AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "cn-north-1", env: map[string]string{"AWS_REGION": "cn-north-1"}},
	{name: "cn-north-1 over dual-stack", env: map[string]string{"AWS_REGION": "cn-north-1", "AWS_USE_DUALSTACK_ENDPOINT": "true"}},
	{name: "a FIPS pseudo region", env: map[string]string{"AWS_REGION": "fips-us-east-1"}},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example"}},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME with a path", env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:8080/gateway/bedrock/"}},
	{name: "a configured endpoint with a path and no slash", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example/gateway"}},
	{name: "a configured endpoint with a query", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example/gw/?tenant=a"}},
	{name: "a configured endpoint with an escaped path", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example/a%20b/c"}},
	{name: "a configured endpoint with an escaped slash", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example/a%2Fb/"}},
	{name: "a configured endpoint with a port", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example:8443"}},
	{name: "a services section", profile: "region = eu-central-1\nservices = s\n[services s]\nbedrock_runtime =\n  endpoint_url = https://runtime.proxy.example/v\n"},
	{name: "AWS_ENDPOINT_URL", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "https://all.proxy.example/aws"}},
	{name: "AWS_ENDPOINT_URL over a services section", env: map[string]string{"AWS_ENDPOINT_URL": "https://all.proxy.example"},
		profile: "region = us-east-1\nservices = s\n[services s]\nbedrock_runtime =\n  endpoint_url = https://runtime.proxy.example/v\n"},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME over AWS_ENDPOINT_URL", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "https://all.proxy.example", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example"}},
	{name: "endpoint_url", profile: "region = us-east-1\nendpoint_url = https://profile.proxy.example\n"},
	{name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
		"AWS_ENDPOINT_URL": "https://all.proxy.example", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example"}},
	{name: "ignore_configured_endpoint_urls over FIPS", env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "true"},
		profile: "region = us-gov-east-1\nignore_configured_endpoint_urls = true\nendpoint_url = https://profile.proxy.example\n"},
	// the SDK's client refuses these, and so must New
	{name: "FIPS with a configured endpoint", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_USE_FIPS_ENDPOINT": "true", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://user:s3cret@bedrock.proxy.example"}},
	{name: "dual-stack with a configured endpoint", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_USE_DUALSTACK_ENDPOINT": "true", "AWS_ENDPOINT_URL": "https://all.proxy.example?token=s3cret"}},
	{name: "a configured endpoint that is not a URL", env: map[string]string{"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://proxy.example:s3cret"}},
	{name: "a region that is not one", env: map[string]string{"AWS_REGION": "us east 1"}},
	{name: "an empty endpoint_url in the services section", profile: "region = us-east-1\nservices = s\n[services s]\nbedrock_runtime =\n  endpoint_url =\n"},
}

// TestBedrocksAddressIsTheAWSSDKs pins, in each environment, that the
// request New's wire sends goes to the scheme, host and path the AWS
// SDK's bedrockruntime client (made from LoadDefaultConfig's
// configuration) sends InvokeModel to, signed for the region that client
// signs for — or that New fails, saying why without a secret, where the
// client fails — whether New loads the configuration or is given
// LoadDefaultConfig's (read as the client reads it: its BaseEndpoint and
// ConfigSources); and that ANTHROPIC_BEDROCK_BASE_URL replaces the
// address in every one of them.
func TestBedrocksAddressIsTheAWSSDKs(t *testing.T) {
	for _, e := range addressEnvironments {
		for _, v := range []struct{ override, given string }{{}, {given: " given LoadDefaultConfig's configuration"}, {override: "https://gateway.example/bedrock"}} {
			override := v.override
			name := e.name + v.given
			if override != "" {
				name += " under ANTHROPIC_BEDROCK_BASE_URL"
			}
			t.Run(name, func(t *testing.T) {
				addressEnvironment(t, e.env, e.profile)
				sdkTo, sdkScope, sdkErr := sdkInvoke(t)
				sdkCfg, err := config.LoadDefaultConfig(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				var given *aws.Config
				if v.given != "" {
					given = &sdkCfg
				}
				sdkRegion := sdkCfg.Region
				if override != "" {
					t.Setenv("ANTHROPIC_BEDROCK_BASE_URL", override)
					sdkTo, sdkScope, sdkErr = override+"/model/claude-test/invoke", sdkRegion, nil
				}
				srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
				_, tapped := providertest.Tap(t, srv)
				var sent []*http.Request
				client := &http.Client{Transport: underModel{tapped.Transport, func(r *http.Request) { sent = append(sent, r) }}}
				p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: true}, AWS: given})
				if sdkErr != nil {
					if err == nil {
						t.Fatalf("the SDK's client failed (%v), New did not", sdkErr)
					}
					if strings.Contains(err.Error(), "s3cret") {
						t.Errorf("the error %q shows a secret", err)
					}
					if !strings.Contains(err.Error(), "bedrock") {
						t.Errorf("the error %q does not say it is Bedrock's", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("the SDK's client sent to %s, New failed: %v", sdkTo, err)
				}
				if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
					t.Fatal(err)
				}
				u := sent[0].URL
				if got := u.Scheme + "://" + u.Host + u.EscapedPath(); got != sdkTo {
					t.Errorf("sent to %s, the SDK's client to %s", got, sdkTo)
				}
				if got := scopeRegion(sent[0].Header); got != sdkScope {
					t.Errorf("signed for %q, the SDK's client for %q", got, sdkScope)
				}
			})
		}
	}
}

// TestAnAddressErrorSaysWhatIsWrong pins what New's error says where the
// environment makes no address.
func TestAnAddressErrorSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		profile string
		want    []string
	}{
		{"FIPS with an endpoint", map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://user:s3cret@proxy.example"},
			"", []string{"bedrock-runtime endpoint", "FIPS", `"https://xxxxx@proxy.example"`}},
		{"no URL", map[string]string{"AWS_ENDPOINT_URL": "https://proxy.example:s3cret"}, "", []string{"not a URL", "invalid port"}},
		{"a bad region", map[string]string{"AWS_REGION": "us east 1"}, "", []string{`region "us east 1"`, "not a valid host name"}},
		{"an empty endpoint", nil, "services = s\n[services s]\nbedrock_runtime =\n  endpoint_url =\n", []string{"configured endpoint of Bedrock Runtime is empty"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"AWS_REGION": "us-east-1"}
			for k, v := range c.env {
				env[k] = v
			}
			addressEnvironment(t, env, c.profile)
			_, err := New(Config{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

// addressEnvironment is hermetic's environment with env's variables,
// static keys, and a config file of [profile p] with profile's lines
// (AWS_PROFILE=p).
func addressEnvironment(t *testing.T, env map[string]string, profile string) {
	t.Helper()
	hermetic(t)
	t.Setenv("AWS_PROFILE", "p")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for k, v := range env {
		if v == "-" {
			v = ""
		}
		t.Setenv(k, v)
	}
	path := os.Getenv("AWS_CONFIG_FILE")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[profile p]\n"+profile), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sdkInvoke sends InvokeModel of claude-test with the SDK's
// bedrockruntime client made from LoadDefaultConfig's configuration,
// through a client that records the request and sends nothing; it
// returns where the request went (scheme, host, escaped path) and the
// region of its signature, or why the client sent nothing.
func sdkInvoke(t *testing.T) (to, scope string, err error) {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("LoadDefaultConfig: %v", err)
	}
	var sent *http.Request
	c := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.HTTPClient = recordOnly(func(r *http.Request) { sent = r })
		o.Retryer = aws.NopRetryer{}
	})
	_, err = c.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String("claude-test"), Body: []byte("{}")})
	if sent == nil {
		return "", "", err
	}
	if sent.URL.Scheme == "" || sent.URL.Host == "" {
		return "", "", errors.New("the client made a request to no address")
	}
	return sent.URL.Scheme + "://" + sent.URL.Host + sent.URL.EscapedPath(), scopeRegion(sent.Header), nil
}

// underModel is a transport that records each request as the wire sent
// it, then sends it to the fake Bedrock (inner) at its path from
// "/model/" on: the fake answers at no other path.
type underModel struct {
	inner  http.RoundTripper
	record func(*http.Request)
}

func (u underModel) RoundTrip(r *http.Request) (*http.Response, error) {
	u.record(r)
	r = r.Clone(r.Context())
	if i := strings.Index(r.URL.Path, "/model/"); i >= 0 {
		r.URL.Path = r.URL.Path[i:]
	}
	if i := strings.Index(r.URL.RawPath, "/model/"); i >= 0 {
		r.URL.RawPath = r.URL.RawPath[i:]
	}
	return u.inner.RoundTrip(r)
}

// recordOnly is an HTTP client that records each request and fails it.
type recordOnly func(*http.Request)

func (f recordOnly) Do(r *http.Request) (*http.Response, error) {
	f(r)
	return nil, errors.New("recorded, not sent")
}

// scopeRegion is the region of a SigV4 Authorization header's credential
// scope, "" without one.
func scopeRegion(h http.Header) string {
	m := regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]*)/`).FindStringSubmatch(h.Get("Authorization"))
	if m == nil {
		return ""
	}
	return m[1]
}
