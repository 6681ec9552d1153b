package vertex

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	sdkvertex "github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/internal/anthropicsdk"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkWire is the wire as it was before Platform.Send: the first-party
// body, rewritten and routed by anthropic-sdk-go's vertex middleware
// (vertex.WithCredentials), which also authorized the HTTP client. What
// New sends is held to what it sent.
func sdkWire(t testing.TB, cfg Config, th anthropic.Thinking) provider.Provider {
	t.Helper()
	base, err := hostOnly(cfg.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	first, err := anthropic.New(anthropic.Config{APIKey: "unused", NoStream: cfg.NoStream, CacheTTL: cfg.CacheTTL, Thinking: th})
	if err != nil {
		t.Fatal(err)
	}
	opts := []option.RequestOption{sdkvertex.WithCredentials(context.Background(), cfg.Region, cfg.Project, cfg.Credentials)}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	return anthropicsdk.Wire{First: first, Options: opts, HTTPClient: cfg.HTTPClient, Version: Version, Thinking: th, NoStream: cfg.NoStream}
}

// What New sends is what the SDK's vertex middleware sent for the same
// conversation: the same bytes to the same URL with the same headers, the
// token included; and where the middleware refused a model, a project or
// a region before sending, New refuses it with the same error.
func TestWhatIsSentIsWhatTheSDKsMiddlewareSent(t *testing.T) {
	for _, tc := range []struct {
		name, model, region, project, baseURL string
		noStream                              bool
		thinking                              anthropic.Thinking
	}{
		{name: "streamed", model: "claude-test"},
		{name: "whole", model: "claude-test", noStream: true},
		{name: "interleaved thinking's beta", model: "claude-test", thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "whole, interleaved thinking's beta", model: "claude-test", noStream: true, thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "a versioned model", model: "claude-sonnet-4-5@20250929"},
		{name: "sub-delimiters and escapes", model: "m (x)!*';,=+$&@~%2F/é"},
		{name: "the global region", model: "claude-test", region: "global"},
		{name: "the eu multi-region", model: "claude-test", region: "eu", noStream: true},
		{name: "the us multi-region", model: "claude-test", region: "us"},
		{name: "a project to escape", model: "claude-test", project: "my project(1)"},
		{name: "a Claude Code style base URL", model: "claude-test", baseURL: "https://vertex-proxy.example/v1"},
		{name: "no model", model: ""},
		{name: "a dot segment", model: ".."},
		{name: "a dot before a semicolon", model: ".;x"},
		{name: "a leading semicolon", model: ";x"},
		{name: "a project that is a dot segment", model: "claude-test", project: ".."},
		{name: "a region that starts with a semicolon", model: "claude-test", region: ";r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewVertex(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
			tap, client := providertest.Tap(t, srv)
			cfg := Config{
				Config:      anthropic.Config{HTTPClient: client, NoStream: tc.noStream, MaxRetries: -1, BaseURL: tc.baseURL},
				Region:      first(tc.region, "us-east5"),
				Project:     first(tc.project, "test-project"),
				Credentials: staticToken(""),
			}
			ours, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if ours, err = ours.WithThinking(tc.thinking); err != nil {
				t.Fatal(err)
			}
			pair := []provider.Provider{ours, sdkWire(t, cfg, tc.thinking)}
			req := providertest.SampleRequest()
			req.Model = tc.model
			req.MaxTokens = 4096
			got, errs := tap.Exchange(req, pair[0], pair[1])
			providertest.SameRequests(t, tc.name, got, errs)
		})
	}
}

// FuzzTheRouteIsTheSDKs holds New's URL, body and refusals for any model
// to the SDK's vertex middleware's, answered in process.
func FuzzTheRouteIsTheSDKs(f *testing.F) {
	for _, m := range []string{"claude-test", "claude-x@20250101", "..", ".;a", "%2e%2E", ";", "a b", "\xff\xfe", "é\x80", "%3b", "./", "~!$&'()*+,;=:@", "a/b"} {
		f.Add(m, false)
	}
	tap := &providertest.Wiretap{}
	var pairs [2][2]provider.Provider
	for i, noStream := range []bool{false, true} {
		cfg := Config{
			Config:      anthropic.Config{HTTPClient: &http.Client{Transport: tap}, NoStream: noStream, MaxRetries: -1},
			Region:      "us-east5",
			Project:     "test-project",
			Credentials: &google.Credentials{TokenSource: staticToken("").TokenSource},
		}
		ours, err := New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		pairs[i] = [2]provider.Provider{ours, sdkWire(f, cfg, anthropic.Thinking{})}
	}
	f.Fuzz(func(t *testing.T, model string, noStream bool) {
		pair := pairs[0]
		if noStream {
			pair = pairs[1]
		}
		req := providertest.SampleRequest()
		req.Model = model
		// a streamed request's in-process answer, a whole message, is an
		// error: the same on both
		got, errs := tap.Exchange(req, pair[0], pair[1])
		providertest.SameRequests(t, "model "+model, got, errs)
	})
}

// The body a request reports as sent (Request.OnBody, which the agent
// keeps for the API) is, byte for byte, what Vertex received.
func TestTheBodyReportedSentIsWhatVertexReceived(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
		p, _ := newWire(t, srv, noStream)
		providertest.CheckReportedBody(t, srv, p, providertest.SampleRequest())
	}
}
