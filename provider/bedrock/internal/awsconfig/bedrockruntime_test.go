package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// endpointSettings are the ways the environment and the shared config
// file say where Bedrock Runtime is: each is tried in every region of
// endpointRegions. A value "-" sets a variable to the empty string (the
// SDK looks some up, set or not).
var endpointSettings = []struct {
	name    string
	env     map[string]string
	profile string // lines of [profile p]
	extra   string // more sections of the config file
}{
	{name: "nothing"},
	{name: "AWS_USE_FIPS_ENDPOINT", env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "AWS_USE_DUALSTACK_ENDPOINT", env: map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "true"}},
	{name: "both variables", env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "true"}},
	{name: "use_fips_endpoint", profile: "use_fips_endpoint = true\n"},
	{name: "use_dualstack_endpoint", profile: "use_dualstack_endpoint = true\n"},
	{name: "AWS_USE_FIPS_ENDPOINT=false over use_fips_endpoint", env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "false"}, profile: "use_fips_endpoint = true\n"},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", env: map[string]string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example/base/"}},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME with FIPS", env: map[string]string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example", "AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "an empty AWS_ENDPOINT_URL_BEDROCK_RUNTIME", env: map[string]string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "-"}},
	{name: "a services section", profile: "services = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "a services section for another service", profile: "services = s\n", extra: "[services s]\nbedrock =\n  endpoint_url = http://127.0.0.1:9/control\n"},
	{name: "an empty endpoint_url in the services section", profile: "services = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url =\n"},
	{name: "AWS_ENDPOINT_URL", env: map[string]string{"AWS_ENDPOINT_URL": "https://all.proxy.example/aws"}},
	{name: "AWS_ENDPOINT_URL over a services section", env: map[string]string{"AWS_ENDPOINT_URL": "https://all.proxy.example"},
		profile: "services = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "an empty AWS_ENDPOINT_URL over a services section", env: map[string]string{"AWS_ENDPOINT_URL": "-"},
		profile: "services = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "AWS_ENDPOINT_URL_BEDROCK_RUNTIME over AWS_ENDPOINT_URL", env: map[string]string{"AWS_ENDPOINT_URL": "https://all.proxy.example", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example"}},
	{name: "endpoint_url", profile: "endpoint_url = https://profile.proxy.example/p\n"},
	{name: "endpoint_url under a services section", profile: "endpoint_url = https://profile.proxy.example/p\nservices = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", env: map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://bedrock.proxy.example"},
		profile: "endpoint_url = https://profile.proxy.example/p\n"},
	{name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS with AWS_ENDPOINT_URL", env: map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_ENDPOINT_URL": "https://all.proxy.example"}},
	{name: "ignore_configured_endpoint_urls", profile: "ignore_configured_endpoint_urls = true\nservices = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=false over ignore_configured_endpoint_urls", env: map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false"},
		profile: "ignore_configured_endpoint_urls = true\nservices = s\n", extra: "[services s]\nbedrock_runtime =\n  endpoint_url = http://127.0.0.1:9/runtime\n"},
	{name: "a configured endpoint that is no URL", env: map[string]string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "::not a url"}},
}

// endpointRegions are regions of the partitions that differ (GovCloud's
// FIPS, China's suffixes) and a FIPS pseudo region.
var endpointRegions = []string{"us-east-1", "eu-west-1", "us-gov-west-1", "cn-north-1", "fips-us-east-1"}

// TestABedrockRuntimeClientFromTheConfigurationSendsWhereTheSDKsWould
// holds Load's BaseEndpoint and ConfigSources to LoadDefaultConfig's: the
// SDK's bedrockruntime client made from each (NewFromConfig) sends
// InvokeModel to the same scheme, host and path and signs it for the same
// region, or fails on both, in every region with every setting.
func TestABedrockRuntimeClientFromTheConfigurationSendsWhereTheSDKsWould(t *testing.T) {
	cases, fails := 0, 0
	for _, region := range endpointRegions {
		for _, s := range endpointSettings {
			t.Run(region+" "+s.name, func(t *testing.T) {
				dir := t.TempDir()
				env := map[string]string{"AWS_PROFILE": "p", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s", "AWS_EC2_METADATA_DISABLED": "true"}
				for k, v := range s.env {
					env[k] = v
				}
				setEnvironment(t, environment{env: env}, "http://127.0.0.1:9", dir)
				for k, v := range s.env {
					if v == "-" {
						t.Setenv(k, "")
					}
				}
				conf := "[profile p]\nregion = " + region + "\n" + s.profile + s.extra
				if err := os.MkdirAll(filepath.Join(dir, ".aws"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, ".aws", "config"), []byte(conf), 0o600); err != nil {
					t.Fatal(err)
				}
				sdkCfg, err := config.LoadDefaultConfig(context.Background())
				if err != nil {
					t.Fatalf("LoadDefaultConfig: %v", err)
				}
				ourCfg, err := Load(context.Background())
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				sdkTo, sdkScope, sdkErr := invokeFrom(sdkCfg)
				ourTo, ourScope, ourErr := invokeFrom(ourCfg)
				cases++
				switch {
				case sdkErr != nil && ourErr != nil:
					fails++
				case sdkErr != nil || ourErr != nil:
					t.Errorf("from LoadDefaultConfig's: %s %v; from Load's: %s %v", sdkTo, sdkErr, ourTo, ourErr)
				case sdkTo != ourTo || sdkScope != ourScope:
					t.Errorf("from LoadDefaultConfig's: %s signed for %q; from Load's: %s signed for %q", sdkTo, sdkScope, ourTo, ourScope)
				}
			})
		}
	}
	t.Logf("%d cases, %d failing on both", cases, fails)
	if fails == 0 || fails == cases {
		t.Errorf("%d of %d cases fail: the table does not try both outcomes", fails, cases)
	}
}

// invokeFrom sends InvokeModel with the SDK's bedrockruntime client made
// from cfg, through a client that records it and sends nothing, and
// returns where it went (scheme, host, path) and the region of its
// signature's scope; an error when the client failed before sending or
// the request's URL is not one a transport could send to.
func invokeFrom(cfg aws.Config) (to, scope string, err error) {
	var sent *http.Request
	c := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.HTTPClient = doFunc(func(r *http.Request) (*http.Response, error) { sent = r; return nil, errRecorded })
		o.Retryer = aws.NopRetryer{}
	})
	_, err = c.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String("m"), Body: []byte("{}")})
	if sent == nil {
		return "", "", err
	}
	if sent.URL.Scheme == "" || sent.URL.Host == "" {
		return "", "", fmt.Errorf("no address: %q", sent.URL)
	}
	m := regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]*)/`).FindStringSubmatch(sent.Header.Get("Authorization"))
	if m != nil {
		scope = m[1]
	}
	return sent.URL.Scheme + "://" + sent.URL.Host + sent.URL.EscapedPath(), scope, nil
}

var errRecorded = errors.New("recorded, not sent")

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
