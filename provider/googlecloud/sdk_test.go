package googlecloud

import (
	"net/http"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	sdkgc "github.com/anthropics/anthropic-sdk-go/v2/googlecloud"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/internal/anthropicsdk"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkWire is the wire as it was before Platform.Authorize: every request
// through the SDK's plumbing, its googlecloud package's options routing
// and authorizing it. What New sends is held to what it sent.
func sdkWire(t *testing.T, cfg Config, th anthropic.Thinking) provider.Provider {
	t.Helper()
	client, err := sdkgc.NewClient(t.Context(), sdkgc.ClientConfig{Project: cfg.Project, WorkspaceID: cfg.WorkspaceID, BaseURL: cfg.BaseURL, TokenSource: cfg.Credentials.TokenSource})
	if err != nil {
		t.Fatal(err)
	}
	first, err := anthropic.New(anthropic.Config{APIKey: "unused", NoStream: cfg.NoStream, CacheTTL: cfg.CacheTTL, Thinking: th})
	if err != nil {
		t.Fatal(err)
	}
	// The SDK's package builds its services without the first-party
	// environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ...)
	opts := append([]option.RequestOption{option.WithoutEnvironmentDefaults()}, client.Options...)
	return anthropicsdk.Wire{First: first, Options: opts, HTTPClient: cfg.HTTPClient, Thinking: th, NoStream: cfg.NoStream}
}

// The gateway's address for a project, location and workspace is the one
// the SDK's googlecloud package posts to, escaped as it escapes them; and
// where the SDK refuses them, New refuses them too.
func TestTheBaseURLIsTheSDKs(t *testing.T) {
	for _, tc := range []struct{ project, location, workspace string }{
		{"test-project", "global", "wrkspc_test"},
		{"my project(1)", "us-east5", "wrkspc_a/b"},
		{"p", "europe-west4", "wrkspc_%2F é"},
		{"..", "global", "w"},
		{"p", ".", "w"},
		{"p", "global", ".."},
		{"p", "global", "%2e%2E"},
		{"p", "global", ";w"},
		{"p", ";l", "w"},
		{"p", "global", ".;w"},
		{"~!$&'()*+,;=:@", "global", "w"},
	} {
		t.Run(tc.project+"/"+tc.location+"/"+tc.workspace, func(t *testing.T) {
			ours, err := baseURL(tc.project, tc.location, tc.workspace)
			want, sdkErr := sdkBaseURL(t, tc.project, tc.location, tc.workspace)
			if (err != nil) != (sdkErr != nil) {
				t.Fatalf("error %v, the SDK's %v", err, sdkErr)
			}
			if err == nil && ours+"v1/messages" != want {
				t.Fatalf("%q\nthe SDK posts to %q", ours+"v1/messages", want)
			}
		})
	}
}

// sdkBaseURL is the URL the SDK's googlecloud client posts a Messages
// request to, or the error it refuses it with.
func sdkBaseURL(t *testing.T, project, location, workspace string) (string, error) {
	client, err := sdkgc.NewClient(t.Context(), sdkgc.ClientConfig{Project: project, Location: location, WorkspaceID: workspace, SkipAuth: true})
	if err != nil {
		return "", err
	}
	var p send.Probe
	var resp *http.Response
	sdkClient := sdk.NewClient(append([]option.RequestOption{option.WithoutEnvironmentDefaults()}, client.Options...)...)
	err = sdkClient.Post(t.Context(), "v1/messages", nil, &resp, option.WithRequestBody("application/json", []byte("{}")), option.WithMiddleware(p.Middleware))
	target, err := p.Target(err)
	if err != nil {
		return "", err
	}
	return target.URL.String(), nil
}

// countingTokens is a token source whose every token is new, so that a
// test sees which request fetched one.
type countingTokens struct{ n atomic.Int64 }

func (c *countingTokens) Token() (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: "ya29.n" + string(rune('0'+c.n.Add(1))), TokenType: "Bearer"}, nil
}

// TestWhatIsSentIsWhatTheSDKSent holds a request, streamed or whole,
// posted directly (Platform.Authorize), to the one the SDK's plumbing and
// its googlecloud options sent: the same method, URL, headers (the token
// included) and body, with thinking's beta header and with a base URL.
func TestWhatIsSentIsWhatTheSDKSent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		thinking anthropic.Thinking
		baseURL  string
		noStream bool
	}{
		{name: "streamed"},
		{name: "interleaved thinking's beta", thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "a base URL", baseURL: "https://proxy.example/gc/invoke/"},
		{name: "whole", noStream: true},
		{name: "whole, interleaved thinking's beta", noStream: true, thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "whole, a base URL", noStream: true, baseURL: "https://proxy.example/gc/invoke/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hermetic(t)
			srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
			tap, client := providertest.Tap(t, srv)
			creds := staticToken("")
			cfg := Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1, BaseURL: tc.baseURL, NoStream: tc.noStream},
				Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: creds}
			ours, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if ours, err = ours.WithThinking(tc.thinking); err != nil {
				t.Fatal(err)
			}
			pair := []provider.Provider{ours, sdkWire(t, cfg, tc.thinking)}
			req := providertest.SampleRequest()
			req.MaxTokens = 4096
			got, errs := tap.Exchange(req, pair[0], pair[1])
			providertest.SameRequests(t, tc.name, got, errs)
		})
	}
}

// TestATokenIsFetchedForRequestsNotWhenTheWireIsMade pins that New asks
// the credentials for nothing (reading the SDK's headers must not fetch
// a token: that is a call to Google), and that requests carry the token,
// reused while it is valid.
func TestATokenIsFetchedForRequestsNotWhenTheWireIsMade(t *testing.T) {
	hermetic(t)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	tokens := &countingTokens{}
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1}, Project: "test-project", WorkspaceID: "wrkspc_test",
		Credentials: &google.Credentials{TokenSource: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	if n := tokens.n.Load(); n != 0 {
		t.Fatalf("New fetched %d tokens", n)
	}
	for range 2 {
		if _, err := p.Complete(t.Context(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if s.Count() != 2 {
		t.Fatalf("%d requests went out, want 2", s.Count())
	}
	for i := range s.Count() {
		if auth := s.Sent(i).Header.Values("Authorization"); len(auth) != 1 || auth[0] != "Bearer ya29.n1" {
			t.Errorf("request %d: Authorization %q, want the first token, reused", i, auth)
		}
	}
}
