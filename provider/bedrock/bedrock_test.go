package bedrock

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/tidwall/sjson"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

// staticKeys are AWS credentials that need no lookup.
var staticKeys = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
})

func newWire(t *testing.T, srv *providertest.Server, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	return newWireTTL(t, srv, "", noStream)
}

// newWireTTL is newWire with the cache lifetime ttl.
func newWireTTL(t *testing.T, srv *providertest.Server, ttl anthropic.CacheTTL, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: 3, CacheTTL: ttl}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

// wire is Bedrock's wire for the checks every platform passes alike
// (providertest.PlatformAnswers, OneHourCache).
var wire = providertest.PlatformWire{
	Name:  "bedrock",
	Serve: providertest.NewBedrock,
	New: func(t *testing.T, srv *providertest.Server, ttl string, noStream bool) provider.Provider {
		p, _ := newWireTTL(t, srv, anthropic.CacheTTL(ttl), noStream)
		return p
	},
}

// Bedrock reads answers and marks the cache as the API's wire does.
func TestBedrockReadsAnswersAndMarksTheCacheAsTheAPIsWire(t *testing.T) {
	providertest.PlatformAnswers(t, wire)
}

// What Bedrock receives for a known conversation, pinned: the Anthropic
// wire's body less model and stream, anthropic_version at its end.
func TestTheBodyBedrockReceivesIsPinned(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
		p, _ := newWire(t, srv, noStream)
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		got := srv.Requests()[0]
		providertest.Golden(t, "testdata/request.golden.json", got, *update && !noStream)
		// the same bytes the first-party wire builds, the model and stream moved
		want, err := anthropic.Body(providertest.SampleRequest(), !noStream)
		if err != nil {
			t.Fatal(err)
		}
		want, _ = sjson.DeleteBytes(want, "model")
		want, _ = sjson.DeleteBytes(want, "stream")
		want, _ = sjson.SetBytes(want, "anthropic_version", Version)
		if string(got) != string(want) {
			t.Fatalf("sent %s\nwant %s", got, want)
		}
	}
}

func TestTheModelGoesInThePathOfInvokeModelAndTheRequestIsSigned(t *testing.T) {
	for _, tc := range []struct {
		noStream bool
		url      string
	}{
		{false, "https://bedrock-runtime.us-east-1.amazonaws.com/model/claude-test/invoke-with-response-stream"},
		{true, "https://bedrock-runtime.us-east-1.amazonaws.com/model/claude-test/invoke"},
	} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
		p, s := newWire(t, srv, tc.noStream)
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		if s.Sent(0).URL != tc.url {
			t.Errorf("sent to %s, want %s", s.Sent(0).URL, tc.url)
		}
		auth := s.Sent(0).Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
			t.Errorf("Authorization %q", auth)
		}
		if h := s.Sent(0).Header; h.Get("x-api-key") != "" || h.Get("anthropic-version") != "" {
			t.Errorf("first-party headers sent: %v", h)
		}
	}
}

func TestAModelIDWithAColonIsEscapedInThePath(t *testing.T) {
	srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
	p, s := newWire(t, srv, false)
	req := providertest.SampleRequest()
	req.Model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if want := "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"; !strings.HasSuffix(s.Sent(0).URL, want) && !strings.HasSuffix(s.Sent(0).URL, strings.ReplaceAll(want, ":", "%3A")) {
		t.Fatalf("sent to %s", s.Sent(0).URL)
	}
}

func TestErrorsAreBedrocksOwnAndRetriedAsTheAPIs(t *testing.T) {
	t.Run("a 400 is reported at once with Bedrock's message", func(t *testing.T) {
		srv := providertest.NewBedrock(t, providertest.Step{Status: 400, ErrorMessage: "The provided model identifier is invalid."})
		p, _ := newWire(t, srv, false)
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "bedrock: ") || !strings.Contains(err.Error(), "The provided model identifier is invalid.") || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
		}
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("the SDK's error is not wrapped: %v", err)
		}
	})
	t.Run("throttling and server errors are retried", func(t *testing.T) {
		srv := providertest.NewBedrock(t, providertest.Step{Status: 429}, providertest.Step{Status: 503}, providertest.Step{Status: 500}, providertest.Step{Text: "finally"})
		p, _ := newWire(t, srv, false)
		resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err != nil || resp.Message.Parts[0].Text != "finally" || len(srv.Requests()) != 4 {
			t.Fatalf("resp %+v, err %v, %d requests", resp, err, len(srv.Requests()))
		}
	})
	t.Run("an exception in the stream is an error with its message", func(t *testing.T) {
		srv := providertest.NewBedrock(t, providertest.Step{Raw: string(providertest.BedrockException("throttlingException", "Too many tokens, please wait before trying again."))})
		p, _ := newWire(t, srv, false)
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !strings.Contains(err.Error(), "Too many tokens") {
			t.Fatalf("err = %v", err)
		}
		if _, ok := provider.IsTooLong(err); ok {
			t.Fatalf("a throttling is not too long: %v", err)
		}
	})
}

func TestBedrocksRefusalsAsTooLongAreTooLongErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		step          providertest.Step
		tokens, limit int
	}{
		{"the API's words in a ValidationException", providertest.Step{Status: 400, ErrorMessage: "The model returned the following errors: prompt is too long: 208310 tokens > 200000 maximum"}, 208310, 200000},
		{"Bedrock's own words", providertest.Step{Status: 400, ErrorMessage: "Input is too long for requested model."}, 0, 0},
		{"InvokeModel's limit on the body", providertest.Step{Status: 400, ErrorMessage: "1 validation error detected: Value at 'body' failed to satisfy constraint: Member must have length less than or equal to 25000000"}, 0, 0},
		{"an exception before any output", providertest.Step{Raw: string(providertest.BedrockException("validationException", "Input is too long for requested model."))}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewBedrock(t, tc.step, providertest.Step{Text: "a retry was made"})
			p, _ := newWire(t, srv, false)
			_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			tl, ok := provider.IsTooLong(err)
			if !ok || tl.Tokens != tc.tokens || tl.Limit != tc.limit {
				t.Fatalf("err = %v (%+v)", err, tl)
			}
			if !strings.Contains(err.Error(), "bedrock: ") || len(srv.Requests()) != 1 {
				t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
			}
		})
	}
}

func TestTheUsualAWSConfigurationIsRead(t *testing.T) {
	hermetic(t)
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Sent(0).URL, "https://bedrock-runtime.eu-west-3.amazonaws.com/model/") {
		t.Errorf("sent to %s", s.Sent(0).URL)
	}
	if auth := s.Sent(0).Header.Get("Authorization"); !strings.Contains(auth, "Credential=AKIDENV/") || !strings.Contains(auth, "/eu-west-3/bedrock/") {
		t.Errorf("Authorization %q", auth)
	}
}

func TestABedrockAPIKeyIsSentAsABearerToken(t *testing.T) {
	hermetic(t)
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-test")
	srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if auth := s.Sent(0).Header.Get("Authorization"); auth != "Bearer bedrock-api-key-test" {
		t.Fatalf("Authorization %q", auth)
	}
}

func TestNoRegionNamesTheVariable(t *testing.T) {
	hermetic(t)
	_, err := New(Config{})
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("err = %v", err)
	}
}

// hermetic keeps the AWS configuration to what the test sets: no shared
// files, no instance metadata, no variables from the environment — every
// AWS_ one unset, not only empty (the SDK looks some up: an empty
// AWS_ENDPOINT_URL is not an absent one).
func hermetic(t *testing.T) {
	dir := t.TempDir()
	vars := []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			vars = append(vars, k)
		}
	}
	for _, k := range vars {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
