package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	sdkbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/internal/anthropicsdk"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkWire is the wire as it was before Platform.Send: the first-party
// body, rewritten, routed and signed by anthropic-sdk-go's bedrock
// middleware (bedrock.WithConfig). What New sends is held to what it sent.
func sdkWire(t testing.TB, awsCfg aws.Config, cfg anthropic.Config, th anthropic.Thinking) provider.Provider {
	t.Helper()
	first, err := anthropic.New(anthropic.Config{APIKey: "unused", NoStream: cfg.NoStream, CacheTTL: cfg.CacheTTL, Thinking: th})
	if err != nil {
		t.Fatal(err)
	}
	opts := []option.RequestOption{sdkbedrock.WithConfig(awsCfg)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return anthropicsdk.Wire{First: first, Options: opts, HTTPClient: cfg.HTTPClient, Version: Version, Thinking: th, NoStream: cfg.NoStream}
}

// checkSignature fails unless the request's Authorization is SigV4's
// signature, with the test's keys, of the request as it was sent (its
// URL, headers and body), at the time its X-Amz-Date says.
func checkSignature(t testing.TB, s providertest.Sent) {
	t.Helper()
	at, err := time.Parse("20060102T150405Z", s.Header.Get("X-Amz-Date"))
	if err != nil {
		t.Fatalf("X-Amz-Date: %v", err)
	}
	r, err := http.NewRequest(s.Method, s.URL, bytes.NewReader(s.Body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = s.Header.Clone()
	r.Header.Del("Authorization")
	r.Header.Del("X-Amz-Date")
	sum := sha256.Sum256(s.Body)
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Header.Get("Authorization"), r.Header.Get("Authorization"); got != want {
		t.Fatalf("Authorization %q\nis not the signature of what was sent: %q", got, want)
	}
}

// sameRequest fails unless a and b are the same request on the wire: the
// same method, URL, body and headers, but for the time of the signature
// and the signature itself, which checkSignature holds to what was sent.
func sameRequest(t testing.TB, ours, sdks providertest.Sent) {
	t.Helper()
	if ours.Method != sdks.Method || ours.URL != sdks.URL {
		t.Errorf("sent %s %s\nthe SDK's middleware %s %s", ours.Method, ours.URL, sdks.Method, sdks.URL)
	}
	if !bytes.Equal(ours.Body, sdks.Body) {
		t.Errorf("sent\n%s\nthe SDK's middleware sent\n%s", ours.Body, sdks.Body)
	}
	oh, sh := ours.Header.Clone(), sdks.Header.Clone()
	if strings.HasPrefix(sh.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		checkSignature(t, ours)
		checkSignature(t, sdks)
		for _, h := range []http.Header{oh, sh} {
			h.Del("Authorization")
			h.Del("X-Amz-Date")
		}
	}
	if !reflect.DeepEqual(oh, sh) {
		t.Errorf("headers sent\n%v\nthe SDK's middleware sent\n%v", oh, sh)
	}
}

// What New sends is what the SDK's bedrock middleware sent for the same
// conversation: the same bytes to the same URL with the same headers, the
// signature SigV4's of them; and where the middleware refused a model
// before sending, New refuses it with the same error.
func TestWhatIsSentIsWhatTheSDKsMiddlewareSent(t *testing.T) {
	awsCfg := aws.Config{Region: "us-east-1", Credentials: staticKeys}
	for _, tc := range []struct {
		name     string
		model    string
		noStream bool
		thinking anthropic.Thinking
		baseURL  string
		env      map[string]string
	}{
		{name: "streamed", model: "claude-test"},
		{name: "whole", model: "claude-test", noStream: true},
		{name: "interleaved thinking's beta", model: "claude-test", thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "whole, interleaved thinking's beta", model: "claude-test", noStream: true, thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "thinking without a beta", model: "claude-test", noStream: true, thinking: anthropic.Thinking{Budget: 1024, Display: "summarized"}},
		{name: "an inference profile", model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{name: "an ARN", model: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"},
		{name: "sub-delimiters and escapes", model: "m (x)!*';,=+$&@~%2F é"},
		{name: "three dots", model: "..."},
		{name: "a base URL with a path", model: "claude-test", baseURL: "https://proxy.example/bedrock/"},
		{name: "ANTHROPIC_BEDROCK_BASE_URL", model: "claude-test", env: map[string]string{"ANTHROPIC_BEDROCK_BASE_URL": "https://gateway.example"}},
		{name: "a bearer token", model: "claude-test", env: map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-test"}},
		{name: "no model", model: ""},
		{name: "a dot segment", model: ".."},
		{name: "a dot before a semicolon", model: ".;x"},
		{name: "a leading semicolon", model: ";x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
			tap, client := providertest.Tap(t, srv)
			cfg := anthropic.Config{HTTPClient: client, NoStream: tc.noStream, MaxRetries: -1, BaseURL: tc.baseURL}
			ours, err := New(Config{Config: cfg, AWS: &awsCfg})
			if err != nil {
				t.Fatal(err)
			}
			if ours, err = ours.WithThinking(tc.thinking); err != nil {
				t.Fatal(err)
			}
			pair := []provider.Provider{ours, sdkWire(t, awsCfg, cfg, tc.thinking)}
			req := providertest.SampleRequest()
			req.Model = tc.model
			req.MaxTokens = 4096
			got, errs := tap.Exchange(req, pair[0], pair[1])
			if got[1].URL == "" && !strings.HasSuffix(errs[0], errs[1]) {
				t.Fatalf("error %q\nthe SDK's middleware %q", errs[0], errs[1])
			}
			if (got[0].URL == "") != (got[1].URL == "") {
				t.Fatalf("sent %q, the SDK's middleware %q", got[0].URL, got[1].URL)
			}
			if got[0].URL != "" {
				sameRequest(t, got[0], got[1])
			}
		})
	}
}

// FuzzTheRouteIsTheSDKs holds New's URL, body and refusals for any model
// to the SDK's bedrock middleware's, answered in process.
func FuzzTheRouteIsTheSDKs(f *testing.F) {
	for _, m := range []string{"claude-test", "us.anthropic.claude-v1:0", "arn:aws:bedrock:x/y", "..", ".;a", "%2e%2E", ";", "a b", "\xff\xfe", "é\x80", "%3b", "./", "~!$&'()*+,;=:@"} {
		f.Add(m, false)
	}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: staticKeys}
	tap := &providertest.Wiretap{}
	cfg := anthropic.Config{HTTPClient: &http.Client{Transport: tap}, MaxRetries: -1}
	streamed := [2]provider.Provider{}
	whole := [2]provider.Provider{}
	for i, noStream := range []bool{false, true} {
		cfg.NoStream = noStream
		ours, err := New(Config{Config: cfg, AWS: &awsCfg})
		if err != nil {
			f.Fatal(err)
		}
		pair := [2]provider.Provider{ours, sdkWire(f, awsCfg, cfg, anthropic.Thinking{})}
		if i == 0 {
			streamed = pair
		} else {
			whole = pair
		}
	}
	f.Fuzz(func(t *testing.T, model string, stream bool) {
		pair := whole
		if stream {
			pair = streamed
		}
		req := providertest.SampleRequest()
		req.Model = model
		// the in-process answer is a whole message, not a stream: a
		// streamed request's answer is an error, the same on both
		got, errs := tap.Exchange(req, pair[0], pair[1])
		if (got[0].URL == "") != (got[1].URL == "") || got[0].URL == "" && !strings.HasSuffix(errs[0], errs[1]) {
			t.Fatalf("model %q: sent %q (%s), the SDK's middleware %q (%s)", model, got[0].URL, errs[0], got[1].URL, errs[1])
		}
		if got[0].URL != "" {
			sameRequest(t, got[0], got[1])
		}
	})
}

// The body a request reports as sent (Request.OnBody, which the agent
// keeps for the API) is, byte for byte, what Bedrock received.
func TestTheBodyReportedSentIsWhatBedrockReceived(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
		p, _ := newWire(t, srv, noStream)
		providertest.CheckReportedBody(t, srv, p, providertest.SampleRequest())
	}
}
