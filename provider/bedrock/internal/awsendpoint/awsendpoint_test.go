package awsendpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/signin"
	signintypes "github.com/aws/aws-sdk-go-v2/service/signin/types"
	"github.com/aws/aws-sdk-go-v2/service/sso"
	"github.com/aws/aws-sdk-go-v2/service/ssooidc"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sdkPartitions reads the partitions.json of the aws-sdk-go-v2 module in
// go.mod: the data the SDK's endpoint rules use.
func sdkPartitions(t *testing.T) []sdkPartition {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/aws/aws-sdk-go-v2: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "internal", "endpoints", "awsrulesfn", "partitions.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the SDK's partitions: %v", err)
	}
	var doc struct {
		Partitions []sdkPartition `json:"partitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Partitions
}

type sdkPartition struct {
	ID          string                     `json:"id"`
	RegionRegex string                     `json:"regionRegex"`
	Regions     map[string]json.RawMessage `json:"regions"`
	Outputs     struct {
		Name               string `json:"name"`
		DNSSuffix          string `json:"dnsSuffix"`
		DualStackDNSSuffix string `json:"dualStackDnsSuffix"`
		SupportsFIPS       bool   `json:"supportsFIPS"`
		SupportsDualStack  bool   `json:"supportsDualStack"`
	} `json:"outputs"`
}

// TestThePartitionsAreTheSDKs holds the partition table to the SDK's
// partitions.json: the same partitions in the same order, outputs,
// regions, no region overriding its partition's outputs, and the
// hand-written matcher agreeing with regionRegex on every region and
// near miss.
func TestThePartitionsAreTheSDKs(t *testing.T) {
	sdk := sdkPartitions(t)
	if len(sdk) != len(partitions) {
		t.Fatalf("%d partitions, the SDK has %d", len(partitions), len(sdk))
	}
	var probes []string
	for _, sp := range sdk {
		for r := range sp.Regions {
			probes = append(probes, r)
		}
	}
	probes = append(probes, oddRegions...)
	for i, sp := range sdk {
		p := partitions[i]
		o := sp.Outputs
		if p.name != sp.ID || p.name != o.Name || p.dnsSuffix != o.DNSSuffix || p.dualStackDNSSuffix != o.DualStackDNSSuffix ||
			p.supportsFIPS != o.SupportsFIPS || p.supportsDualStack != o.SupportsDualStack {
			t.Errorf("partition %d: ours %+v, the SDK's %s %+v", i, p, sp.ID, o)
		}
		var regions []string
		for r, raw := range sp.Regions {
			regions = append(regions, r)
			var override map[string]any
			if err := json.Unmarshal(raw, &override); err != nil {
				t.Fatal(err)
			}
			delete(override, "description")
			if len(override) > 0 {
				t.Errorf("%s region %s overrides %v: the table has no overrides", sp.ID, r, override)
			}
		}
		slices.Sort(regions)
		if !slices.Equal(regions, p.regions) {
			t.Errorf("%s regions:\n ours %v\n SDK  %v", sp.ID, p.regions, regions)
		}
		re := regexp.MustCompile(sp.RegionRegex)
		for _, r := range probes {
			if got, want := p.matches(r), re.MatchString(r); got != want {
				t.Errorf("%s: matches(%q) = %v, regionRegex %s says %v", sp.ID, r, got, sp.RegionRegex, want)
			}
		}
	}
}

// oddRegions are regions no partition names: pseudo regions, regions a
// regionRegex catches, near misses, and what is not a host name.
var oddRegions = []string{
	"", "aws-global", "us-east-1-fips", "fips-us-east-1", "us-gov-west-1-fips",
	"fips-us-gov-west-1", "us-fips-east-1", "fips-aws-global", "fips--fips", "fips",
	"not a region", "xx-west-9", "us-west-9", "us-west-01", "US-EAST-1", "us_east_1",
	"us-east-1.", ".us-east-1", "a.b", "-us", "us-", "us-gov-west-9", "cn-south-7",
	"eusc-de-west-2", "eusc-fr-east-1", "us-iso-north-3", "us-isob-south-2",
	"eu-isoe-east-2", "us-isof-west-4", "us-east-1a", "us-east-a", "us-west_2-1",
	"mx-central-1-2", "é-west-1", strings.Repeat("a", 64), "localhost",
}

// endpoints are configured base endpoints the table tries with each
// region: none, a host, a loopback URL with a path, and no URL.
var endpoints = []string{"", "https://sts.example.test", "http://127.0.0.1:8080/base/", "::not a url"}

// sdkCall sends, with the SDK's client of s configured from p, the
// operation that credential loading uses, through a transport that
// records the request and sends nothing, and returns the request (nil if
// the client failed before sending).
func sdkCall(t *testing.T, s Service, p Params) (*http.Request, error) {
	t.Helper()
	var sent *http.Request
	client := &recorder{record: func(r *http.Request) { sent = r }}
	fips, dual := aws.FIPSEndpointStateDisabled, aws.DualStackEndpointStateDisabled
	if p.UseFIPS {
		fips = aws.FIPSEndpointStateEnabled
	}
	if p.UseDualStack {
		dual = aws.DualStackEndpointStateEnabled
	}
	var base *string
	if p.Endpoint != "" {
		base = aws.String(p.Endpoint)
	}
	creds := aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
	}))
	ctx := context.Background()
	var err error
	switch s {
	case STS:
		c := sts.New(sts.Options{Region: p.Region, BaseEndpoint: base, HTTPClient: client, Retryer: aws.NopRetryer{}, Credentials: creds,
			EndpointOptions: sts.EndpointResolverOptions{UseFIPSEndpoint: fips, UseDualStackEndpoint: dual}})
		_, err = c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/r"), RoleSessionName: aws.String("s")})
	case SSO:
		c := sso.New(sso.Options{Region: p.Region, BaseEndpoint: base, HTTPClient: client, Retryer: aws.NopRetryer{},
			EndpointOptions: sso.EndpointResolverOptions{UseFIPSEndpoint: fips, UseDualStackEndpoint: dual}})
		_, err = c.GetRoleCredentials(ctx, &sso.GetRoleCredentialsInput{AccessToken: aws.String("t"), AccountId: aws.String("123456789012"), RoleName: aws.String("r")})
	case SSOOIDC:
		c := ssooidc.New(ssooidc.Options{Region: p.Region, BaseEndpoint: base, HTTPClient: client, Retryer: aws.NopRetryer{},
			EndpointOptions: ssooidc.EndpointResolverOptions{UseFIPSEndpoint: fips, UseDualStackEndpoint: dual}})
		_, err = c.CreateToken(ctx, &ssooidc.CreateTokenInput{ClientId: aws.String("c"), ClientSecret: aws.String("s"), GrantType: aws.String("refresh_token"), RefreshToken: aws.String("r")})
	case Signin:
		c := signin.New(signin.Options{Region: p.Region, BaseEndpoint: base, HTTPClient: client, Retryer: aws.NopRetryer{},
			EndpointOptions: signin.EndpointResolverOptions{UseFIPSEndpoint: fips, UseDualStackEndpoint: dual}})
		_, err = c.CreateOAuth2Token(ctx, &signin.CreateOAuth2TokenInput{TokenInput: &signintypes.CreateOAuth2TokenRequestBody{
			ClientId: aws.String("c"), GrantType: aws.String("refresh_token"), RefreshToken: aws.String("r")}})
	case BedrockRuntime:
		c := bedrockruntime.New(bedrockruntime.Options{Region: p.Region, BaseEndpoint: base, HTTPClient: client, Retryer: aws.NopRetryer{}, Credentials: creds,
			EndpointOptions: bedrockruntime.EndpointResolverOptions{UseFIPSEndpoint: fips, UseDualStackEndpoint: dual}})
		_, err = c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String("m"), Body: []byte("{}"), ContentType: aws.String("application/json")})
	}
	return sent, err
}

// recorder is an HTTP client that records the request and fails it.
type recorder struct{ record func(*http.Request) }

var errNotSent = errors.New("recorded, not sent")

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.record(req)
	return nil, errNotSent
}

// operationPaths are the paths of the operations sdkCall sends.
var operationPaths = map[Service]string{STS: "/", SSO: "/federation/credentials", SSOOIDC: "/token", Signin: "/v1/token", BedrockRuntime: "/model/m/invoke"}

// credentialScope is the region of a SigV4 Authorization header's
// credential scope, "" without one.
func credentialScope(h http.Header) string {
	m := regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]*)/`).FindStringSubmatch(h.Get("Authorization"))
	if m == nil {
		return ""
	}
	return m[1]
}

// TestResolveIsWhereTheSDKsClientsSend runs, for each service, every
// region of every partition the SDK knows and the odd ones, with and
// without FIPS and dual-stack, with each configured endpoint: the SDK's
// client and Resolve must both fail or both give the same scheme, host
// and path (the operation's joined to ours) and, for STS and Bedrock
// Runtime (the signed ones), the region the SDK signed with.
func TestResolveIsWhereTheSDKsClientsSend(t *testing.T) {
	var regions []string
	for _, sp := range sdkPartitions(t) {
		for r := range sp.Regions {
			regions = append(regions, r)
		}
	}
	slices.Sort(regions)
	regions = append(regions, oddRegions...)
	cases, errs := 0, 0
	for _, s := range []Service{STS, SSO, SSOOIDC, Signin, BedrockRuntime} {
		for _, region := range regions {
			for _, endpoint := range endpoints {
				for _, fips := range []bool{false, true} {
					for _, dual := range []bool{false, true} {
						p := Params{Region: region, UseFIPS: fips, UseDualStack: dual, Endpoint: endpoint}
						name := fmt.Sprintf("%s %+v", s, p)
						cases++
						req, sdkErr := sdkCall(t, s, p)
						got, signing, err := Resolve(s, p)
						if req == nil {
							errs++
							if err == nil {
								t.Errorf("%s: the SDK failed (%v), Resolve gave %q", name, sdkErr, got)
							} else if !errors.Is(err, ErrInvalid) {
								t.Errorf("%s: error %v does not wrap ErrInvalid", name, err)
							}
							continue
						}
						if err != nil {
							t.Errorf("%s: the SDK sent to %s, Resolve failed: %v", name, req.URL, err)
							continue
						}
						u, perr := url.Parse(got)
						if perr != nil {
							t.Errorf("%s: Resolve gave %q: %v", name, got, perr)
							continue
						}
						ours := u.Scheme + "://" + u.Host + smithyhttp.JoinPath(u.Path, operationPaths[s])
						sdk := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
						if ours != sdk {
							t.Errorf("%s: Resolve sends to %s, the SDK to %s", name, ours, sdk)
						}
						if s == STS || s == BedrockRuntime {
							if scope := credentialScope(req.Header); scope != signing {
								t.Errorf("%s: Resolve signs for %q, the SDK for %q", name, signing, scope)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases, %d of them errors", cases, errs)
	if errs == 0 || errs == cases {
		t.Errorf("%d errors in %d cases: the table does not try both outcomes", errs, cases)
	}
}

// TestResolveErrorsSayWhatIsWrong pins that each refusal names the
// service and the setting at fault.
func TestResolveErrorsSayWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		s    Service
		p    Params
		want []string
	}{
		{STS, Params{}, []string{"sts endpoint", "no region"}},
		{SSO, Params{Region: "not a region"}, []string{"sso endpoint", `region "not a region" is not a valid host name`}},
		{SSOOIDC, Params{Region: "us-east-1", UseFIPS: true, Endpoint: "http://127.0.0.1:1"}, []string{"sso-oidc endpoint", "FIPS", `"http://127.0.0.1:1"`}},
		{Signin, Params{Region: "us-east-1", UseDualStack: true, Endpoint: "http://127.0.0.1:1"}, []string{"signin endpoint", "dual-stack", `"http://127.0.0.1:1"`}},
		{STS, Params{Region: "us-east-1-fips", Endpoint: "http://127.0.0.1:1"}, []string{"FIPS"}},
		{STS, Params{Region: "us-east-1", Endpoint: "::not a url"}, []string{"configured endpoint is not a URL", "missing protocol scheme"}},
		{STS, Params{Region: "us-east-1", Endpoint: "https://sts.example:port"}, []string{"configured endpoint is not a URL", "invalid port after host"}},
		{Service(9), Params{Region: "us-east-1"}, []string{"Service(9)", "unknown service"}},
	} {
		_, _, err := Resolve(c.s, c.p)
		if err == nil {
			t.Errorf("%s %+v: no error", c.s, c.p)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %+v: error %q does not say %q", c.s, c.p, err, w)
			}
		}
	}
}

// TestResolveErrorsNeverShowAnEndpointsSecrets pins that a configured
// endpoint holding a secret (a password or token in its user
// information or query, or typed where a port goes) is shown without it
// when it is an absolute URL and not at all when it is not, while the
// error still says what is wrong.
func TestResolveErrorsNeverShowAnEndpointsSecrets(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
		want []string
	}{
		{"FIPS with a URL holding a password", Params{Region: "us-east-1", UseFIPS: true, Endpoint: "https://user:s3cret@proxy.example"},
			[]string{"FIPS", `"https://xxxxx@proxy.example"`}},
		{"dual-stack with a URL holding a password", Params{Region: "us-east-1", UseDualStack: true, Endpoint: "https://user:s3cret@proxy.example/sts"},
			[]string{"dual-stack", `"https://xxxxx@proxy.example/sts"`}},
		{"FIPS with a token for the user name", Params{Region: "us-east-1", UseFIPS: true, Endpoint: "https://s3cret@proxy.example"},
			[]string{"FIPS", `"https://xxxxx@proxy.example"`}},
		{"FIPS with a secret in the query", Params{Region: "us-east-1", UseFIPS: true, Endpoint: "https://proxy.example/sts?sig=s3cret#cret"},
			[]string{"FIPS", `"https://proxy.example/sts" (its query or fragment not shown)`}},
		{"FIPS with no URL", Params{Region: "us-east-1", UseFIPS: true, Endpoint: "https://user:s3cret@proxy.example:%zz"},
			[]string{"FIPS", "configured endpoint (which is not an absolute URL)"}},
		{"dual-stack with a password and no scheme", Params{Region: "us-east-1", UseDualStack: true, Endpoint: "user:s3cret@proxy.example"},
			[]string{"dual-stack", "configured endpoint (which is not an absolute URL)"}},
		{"a bad escape in the password", Params{Region: "us-east-1", Endpoint: "https://user:s3cret%zz@proxy.example"},
			[]string{"not a URL", "invalid URL escape"}},
		{"a password typed as the port", Params{Region: "us-east-1", Endpoint: "https://proxy.example:s3cret"},
			[]string{"not a URL", "invalid port after host"}},
		{"a control character", Params{Region: "us-east-1", Endpoint: "https://user:s3cret@proxy.example\x7f"},
			[]string{"not a URL", "invalid control character"}},
		{"a quote in the password", Params{Region: "us-east-1", Endpoint: "https://proxy.example:s3\"cret"},
			[]string{"not a URL", "invalid port after host"}},
		{"a leading space", Params{Region: "us-east-1", Endpoint: " https://user:s3cret@proxy.example"},
			[]string{"not a URL", "first path segment in URL cannot contain colon"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Resolve(STS, c.p)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not wrap ErrInvalid", err)
			}
			for _, secret := range []string{"s3cret", "s3", "cret", "%zz"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows %q", err, secret)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
