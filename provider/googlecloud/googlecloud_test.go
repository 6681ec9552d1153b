package googlecloud

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden request files")

// staticToken is Google credentials that need no lookup.
func staticToken(project string) *google.Credentials {
	return &google.Credentials{ProjectID: project, TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})}
}

// hermetic keeps the configuration to what the test sets.
func hermetic(t *testing.T) {
	for _, k := range []string{envProject, envLocation, envWorkspace, envBaseURL, "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
}

// newWire is the wire with the address it derives (claude.googleapis.com),
// each request recorded and sent to srv.
func newWire(t *testing.T, srv *providertest.Server, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	return newWireTTL(t, srv, "", noStream)
}

// newWireTTL is newWire with the cache lifetime ttl.
func newWireTTL(t *testing.T, srv *providertest.Server, ttl anthropic.CacheTTL, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	hermetic(t)
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: 3, CacheTTL: ttl}, Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

// wire is the gateway's wire for the checks every platform passes alike
// (providertest.PlatformAnswers, OneHourCache).
var wire = providertest.PlatformWire{
	Name:  Name,
	Serve: providertest.NewGoogleCloud,
	New: func(t *testing.T, srv *providertest.Server, ttl string, noStream bool) provider.Provider {
		p, _ := newWireTTL(t, srv, anthropic.CacheTTL(ttl), noStream)
		return p
	},
}

// The gateway reads answers and marks the cache as the API's wire does.
func TestTheGatewayReadsAnswersAndMarksTheCacheAsTheAPIsWire(t *testing.T) {
	providertest.PlatformAnswers(t, wire)
}

// What the gateway receives for a known conversation, pinned: the
// first-party wire's body, byte for byte.
func TestTheBodyTheGatewayReceivesIsTheFirstPartyBody(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
		p, _ := newWire(t, srv, noStream)
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		got := srv.Requests()[0]
		golden := "testdata/request.golden.json"
		if noStream {
			golden = "testdata/request-nostream.golden.json"
		}
		providertest.Golden(t, golden, got, *update)
		want, err := anthropic.Body(providertest.SampleRequest(), !noStream)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("sent %s\nwant %s", got, want)
		}
	}
}

func TestTheRequestGoesToTheWorkspacesMessagesWithAGoogleToken(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
		hermetic(t)
		// read by the first-party SDK's defaults, which must not apply here
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
		t.Setenv("ANTHROPIC_BASE_URL", "https://api.example.com/")
		s, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream}, Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: staticToken("")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		if want := "https://claude.googleapis.com/v1/projects/test-project/locations/global/workspaces/wrkspc_test/invoke/v1/messages"; s.Sent(0).URL != want {
			t.Errorf("sent to %s, want %s", s.Sent(0).URL, want)
		}
		h := s.Sent(0).Header
		if auth := h.Values("Authorization"); len(auth) != 1 || auth[0] != "Bearer ya29.test" {
			t.Errorf("Authorization %q", auth)
		}
		if h.Get("x-api-key") != "" || h.Get("anthropic-workspace-id") != "" {
			t.Errorf("headers the gateway refuses were sent: %v", h)
		}
		// the first-party API's version header, which the gateway passes on
		if h.Get("anthropic-version") == "" {
			t.Errorf("no anthropic-version header: %v", h)
		}
	}
}

func TestTheProjectLocationAndWorkspaceComeFromTheSDKsVariables(t *testing.T) {
	hermetic(t)
	t.Setenv(envProject, "env-project")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "not-this-one")
	t.Setenv(envLocation, "us-east5")
	t.Setenv(envWorkspace, "wrkspc_env")
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}, Credentials: staticToken("nor-this-one")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if want := "https://claude.googleapis.com/v1/projects/env-project/locations/us-east5/workspaces/wrkspc_env/invoke/v1/messages"; s.Sent(0).URL != want {
		t.Fatalf("sent to %s, want %s", s.Sent(0).URL, want)
	}
}

func TestTheProjectFallsBackToGoogleCloudProjectThenTheCredentials(t *testing.T) {
	for _, tc := range []struct{ env, creds, want string }{
		{"gcp-project", "creds-project", "/projects/gcp-project/"},
		{"", "creds-project", "/projects/creds-project/"},
	} {
		hermetic(t)
		t.Setenv("GOOGLE_CLOUD_PROJECT", tc.env)
		srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
		s, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client}, WorkspaceID: "w", Credentials: staticToken(tc.creds)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.Sent(0).URL, tc.want) {
			t.Errorf("GOOGLE_CLOUD_PROJECT=%q, credentials' %q: sent to %s", tc.env, tc.creds, s.Sent(0).URL)
		}
	}
}

func TestABaseURLTakesTheWholeAddress(t *testing.T) {
	hermetic(t)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
	t.Setenv(envBaseURL, srv.URL) // neither project nor workspace needed
	p, err := New(Config{Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	// Config.BaseURL comes before the variable
	t.Setenv(envBaseURL, "https://unused.example.com/")
	p, err = New(Config{Config: anthropic.Config{BaseURL: strings.TrimSuffix(srv.URL, "/")}, Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	want := providertest.GoogleCloudPath + "v1/messages"
	if paths := srv.Paths(); len(paths) != 2 || paths[0] != want || paths[1] != want {
		t.Fatalf("paths %v, want %s twice", paths, want)
	}
}

func TestWhatIsMissingIsNamed(t *testing.T) {
	hermetic(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		says string
	}{
		{"no project", Config{WorkspaceID: "w", Credentials: staticToken("")}, envProject},
		{"no workspace", Config{Project: "p", Credentials: staticToken("")}, envWorkspace},
		{"a base URL that is not one", Config{Config: anthropic.Config{BaseURL: "claude.googleapis.com/v1"}, Credentials: staticToken("")}, "want an absolute URL"},
		{"an API key", Config{Config: anthropic.Config{APIKey: "sk-ant"}, Project: "p", WorkspaceID: "w", Credentials: staticToken("")}, "API key is not used"},
		{"credentials without a token source", Config{Project: "p", WorkspaceID: "w", Credentials: &google.Credentials{}}, "no token source"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "google-cloud: ") {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.says)
		}
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	if _, err := New(Config{Project: "p", WorkspaceID: "w"}); err == nil || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("no credentials: err = %v", err)
	}
}

func TestThinkingIsAskedForAsOnTheAPI(t *testing.T) {
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
	p, _ := newWire(t, srv, false)
	thinking, err := p.WithThinking(anthropic.Thinking{Budget: 2048})
	if err != nil {
		t.Fatal(err)
	}
	req := providertest.SampleRequest()
	req.MaxTokens = 4096
	if _, err := thinking.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	th, _ := srv.Request(0)["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(2048) {
		t.Fatalf("thinking %v", srv.Request(0)["thinking"])
	}
}

func TestErrorsNameTheGatewayAndAreRetriedAsTheAPIs(t *testing.T) {
	t.Run("a 400 is reported at once with the API's message", func(t *testing.T) {
		srv := providertest.NewGoogleCloud(t, providertest.Step{Status: 400, ErrorMessage: "output_config: Extra inputs are not permitted"})
		p, _ := newWire(t, srv, false)
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "google-cloud: ") || !strings.Contains(err.Error(), "Extra inputs are not permitted") || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
		}
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("the SDK's error is not wrapped: %v", err)
		}
	})
	t.Run("rate limits and server errors are retried", func(t *testing.T) {
		srv := providertest.NewGoogleCloud(t, providertest.Step{Status: 429}, providertest.Step{Status: 529}, providertest.Step{Status: 503}, providertest.Step{Text: "finally"})
		p, _ := newWire(t, srv, false)
		resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err != nil || resp.Message.Parts[0].Text != "finally" || len(srv.Requests()) != 4 {
			t.Fatalf("resp %+v, err %v, %d requests", resp, err, len(srv.Requests()))
		}
	})
	t.Run("a token that cannot be had is the request's error", func(t *testing.T) {
		hermetic(t)
		srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "never"})
		_, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1}, Project: "p", WorkspaceID: "w", Credentials: &google.Credentials{TokenSource: failing{}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err == nil || !strings.Contains(err.Error(), "no token here") {
			t.Fatalf("err = %v", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("%d requests sent without a token", n)
		}
	})
}

type failing struct{}

func (failing) Token() (*oauth2.Token, error) { return nil, errors.New("no token here") }

func TestTheGatewaysRefusalsAsTooLongAreTooLongErrors(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		step                  providertest.Step
		tokens, output, limit int
	}{
		{"the API's words", providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"}, 208310, 0, 200000},
		{"the answer's room", providertest.Step{Status: 400, ErrorMessage: "input length and `max_tokens` exceed context limit: 199000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}, 199000, 8192, 200000},
		{"a 413", providertest.Step{Status: 413, ErrorMessage: "Request Entity Too Large"}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewGoogleCloud(t, tc.step, providertest.Step{Text: "a retry was made"})
			p, _ := newWire(t, srv, false)
			_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			tl, ok := provider.IsTooLong(err)
			if !ok || tl.Tokens != tc.tokens || tl.Output != tc.output || tl.Limit != tc.limit {
				t.Fatalf("err = %v (%+v)", err, tl)
			}
			if !strings.Contains(err.Error(), "google-cloud: ") || len(srv.Requests()) != 1 {
				t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
			}
		})
	}
}
