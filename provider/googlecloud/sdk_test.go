package googlecloud

import (
	"sync/atomic"
	"testing"

	sdkgc "github.com/anthropics/anthropic-sdk-go/v2/googlecloud"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkWire is the wire as it was before Platform.Authorize: every request
// through the SDK's plumbing, its googlecloud package's options routing
// and authorizing it. What New sends is held to what it sent.
func sdkWire(t *testing.T, cfg Config) *anthropic.OnPlatform {
	t.Helper()
	client, err := sdkgc.NewClient(t.Context(), sdkgc.ClientConfig{Project: cfg.Project, WorkspaceID: cfg.WorkspaceID, BaseURL: cfg.BaseURL, TokenSource: cfg.Credentials.TokenSource})
	if err != nil {
		t.Fatal(err)
	}
	wire := cfg.Config
	wire.BaseURL = ""
	p, err := anthropic.NewOn(anthropic.Platform{Name: Name, Options: append([]option.RequestOption{option.WithoutEnvironmentDefaults()}, client.Options...)}, wire)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// countingTokens is a token source whose every token is new, so that a
// test sees which request fetched one.
type countingTokens struct{ n atomic.Int64 }

func (c *countingTokens) Token() (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: "ya29.n" + string(rune('0'+c.n.Add(1))), TokenType: "Bearer"}, nil
}

// TestWhatIsSentIsWhatTheSDKSent holds a streamed request, posted
// directly (Platform.Authorize), to the one the SDK's plumbing and its
// googlecloud options sent: the same method, URL, headers (the token
// included) and body, with thinking's beta header and with a base URL.
func TestWhatIsSentIsWhatTheSDKSent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		thinking anthropic.Thinking
		baseURL  string
	}{
		{name: "streamed"},
		{name: "interleaved thinking's beta", thinking: anthropic.Thinking{Budget: 2048, Interleaved: true}},
		{name: "a base URL", baseURL: "https://proxy.example/gc/invoke/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hermetic(t)
			srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
			tap, client := providertest.Tap(t, srv)
			creds := staticToken("")
			cfg := Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1, BaseURL: tc.baseURL},
				Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: creds}
			ours, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			pair := []*anthropic.OnPlatform{ours, sdkWire(t, cfg)}
			for i := range pair {
				if pair[i], err = pair[i].WithThinking(tc.thinking); err != nil {
					t.Fatal(err)
				}
			}
			req := providertest.SampleRequest()
			req.MaxTokens = 4096
			got, errs := tap.Exchange(req, pair[0], pair[1])
			providertest.SameExchange(t, tc.name, got, errs)
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
