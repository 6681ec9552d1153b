package vertex

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/sjson"
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

func newWire(t *testing.T, srv *providertest.Server, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	return newWireTTL(t, srv, "", noStream)
}

// newWireTTL is newWire with the cache lifetime ttl.
func newWireTTL(t *testing.T, srv *providertest.Server, ttl anthropic.CacheTTL, noStream bool) (*anthropic.OnPlatform, *providertest.Wiretap) {
	t.Helper()
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: 3, CacheTTL: ttl}, Region: "us-east5", Project: "test-project", Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

// wire is Vertex's wire for the checks every platform passes alike
// (providertest.PlatformAnswers, OneHourCache).
var wire = providertest.PlatformWire{
	Name:  "vertex",
	Serve: providertest.NewVertex,
	New: func(t *testing.T, srv *providertest.Server, ttl string, noStream bool) provider.Provider {
		p, _ := newWireTTL(t, srv, anthropic.CacheTTL(ttl), noStream)
		return p
	},
}

// Vertex reads answers and marks the cache as the API's wire does.
func TestVertexReadsAnswersAndMarksTheCacheAsTheAPIsWire(t *testing.T) {
	providertest.PlatformAnswers(t, wire)
}

// What Vertex receives for a known conversation, pinned: the Anthropic
// wire's body less model, anthropic_version at its end.
func TestTheBodyVertexReceivesIsPinned(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
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
		// the same bytes the first-party wire builds, the model moved
		want, err := anthropic.Body(providertest.SampleRequest(), !noStream)
		if err != nil {
			t.Fatal(err)
		}
		want, _ = sjson.DeleteBytes(want, "model")
		want, _ = sjson.SetBytes(want, "anthropic_version", Version)
		if string(got) != string(want) {
			t.Fatalf("sent %s\nwant %s", got, want)
		}
	}
}

func TestTheModelGoesInThePathOfRawPredictWithAToken(t *testing.T) {
	for _, tc := range []struct {
		noStream bool
		url      string
	}{
		{false, "https://us-east5-aiplatform.googleapis.com/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-test:streamRawPredict"},
		{true, "https://us-east5-aiplatform.googleapis.com/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-test:rawPredict"},
	} {
		srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
		p, s := newWire(t, srv, tc.noStream)
		if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
			t.Fatal(err)
		}
		if s.Sent(0).URL != tc.url {
			t.Errorf("sent to %s, want %s", s.Sent(0).URL, tc.url)
		}
		if auth := s.Sent(0).Header.Get("Authorization"); auth != "Bearer ya29.test" {
			t.Errorf("Authorization %q", auth)
		}
		if h := s.Sent(0).Header; h.Get("x-api-key") != "" || h.Get("anthropic-version") != "" {
			t.Errorf("first-party headers sent: %v", h)
		}
	}
}

func TestTheGlobalRegionHasItsOwnAddress(t *testing.T) {
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}, Region: "global", Project: "test-project", Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	req := providertest.SampleRequest()
	req.Model = "claude-sonnet-4-5@20250929"
	if _, err := p.Complete(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if want := "https://aiplatform.googleapis.com/v1/projects/test-project/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"; s.Sent(0).URL != want {
		t.Fatalf("sent to %s, want %s", s.Sent(0).URL, want)
	}
}

func TestErrorsAreVertexsOwnAndRetriedAsTheAPIs(t *testing.T) {
	t.Run("a 400 is reported at once with the model's message", func(t *testing.T) {
		srv := providertest.NewVertex(t, providertest.Step{Status: 400, ErrorMessage: "output_config: Extra inputs are not permitted"})
		p, _ := newWire(t, srv, false)
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "vertex: ") || !strings.Contains(err.Error(), "Extra inputs are not permitted") || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
		}
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("the SDK's error is not wrapped: %v", err)
		}
	})
	t.Run("quota and server errors are retried", func(t *testing.T) {
		srv := providertest.NewVertex(t, providertest.Step{Status: 429, ErrorMessage: "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model"}, providertest.Step{Status: 529}, providertest.Step{Status: 503}, providertest.Step{Text: "finally"})
		p, _ := newWire(t, srv, false)
		resp, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err != nil || resp.Message.Parts[0].Text != "finally" || len(srv.Requests()) != 4 {
			t.Fatalf("resp %+v, err %v, %d requests", resp, err, len(srv.Requests()))
		}
	})
	t.Run("a token that cannot be had is the request's error", func(t *testing.T) {
		srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
		_, client := providertest.Tap(t, srv)
		creds := &google.Credentials{TokenSource: failing{}}
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1}, Region: "us-east5", Project: "p", Credentials: creds})
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

func TestVertexsRefusalsAsTooLongAreTooLongErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		step          providertest.Step
		tokens, limit int
	}{
		{"the API's words, passed on", providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"}, 208310, 200000},
		{"a 413", providertest.Step{Status: 413, ErrorMessage: "Prompt is too long"}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewVertex(t, tc.step, providertest.Step{Text: "a retry was made"})
			p, _ := newWire(t, srv, false)
			_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
			tl, ok := provider.IsTooLong(err)
			if !ok || tl.Tokens != tc.tokens || tl.Limit != tc.limit {
				t.Fatalf("err = %v (%+v)", err, tl)
			}
			if !strings.Contains(err.Error(), "vertex: ") || len(srv.Requests()) != 1 {
				t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
			}
		})
	}
}

func TestTheRegionAndProjectComeFromTheUsualVariables(t *testing.T) {
	hermetic(t)
	t.Setenv("CLOUD_ML_REGION", "europe-west1")
	t.Setenv("ANTHROPIC_VERTEX_PROJECT_ID", "env-project")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "not-this-one")
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}, Credentials: staticToken("nor-this-one")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if want := "https://europe-west1-aiplatform.googleapis.com/v1/projects/env-project/locations/europe-west1/"; !strings.HasPrefix(s.Sent(0).URL, want) {
		t.Fatalf("sent to %s, want %s...", s.Sent(0).URL, want)
	}
}

func TestTheProjectOfTheCredentialsIsTheLastResort(t *testing.T) {
	hermetic(t)
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	s, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client}, Region: "us-east5", Credentials: staticToken("creds-project")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Sent(0).URL, "/projects/creds-project/") {
		t.Fatalf("sent to %s", s.Sent(0).URL)
	}
}

func TestWhatIsMissingIsNamed(t *testing.T) {
	hermetic(t)
	if _, err := New(Config{Credentials: staticToken("")}); err == nil || !strings.Contains(err.Error(), "CLOUD_ML_REGION") {
		t.Fatalf("no region: err = %v", err)
	}
	if _, err := New(Config{Region: "us-east5", Credentials: staticToken("")}); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_VERTEX_PROJECT_ID") {
		t.Fatalf("no project: err = %v", err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	if _, err := New(Config{Region: "us-east5", Project: "p"}); err == nil || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("no credentials: err = %v", err)
	}
}

// hermetic keeps the configuration to what the test sets.
func hermetic(t *testing.T) {
	for _, k := range []string{"CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "ANTHROPIC_VERTEX_BASE_URL"} {
		t.Setenv(k, "")
	}
}

func TestTheBaseURLIsTheHostAlone(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"https://gateway.example.com", "https://gateway.example.com/", ""},
		{"https://gateway.example.com/", "https://gateway.example.com/", ""},
		{"https://gateway.example.com/v1", "https://gateway.example.com/", ""},
		{"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/", ""},
		{"https://gateway.example.com/vertex/v1", "", `has the path "/vertex/v1"`},
		{"gateway.example.com", "", "want an absolute URL"},
	} {
		got, err := hostOnly(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("hostOnly(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestAClaudeCodeStyleBaseURLReachesTheFake(t *testing.T) {
	hermetic(t)
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	t.Setenv("ANTHROPIC_VERTEX_BASE_URL", srv.URL+"/v1")
	p, err := New(Config{Region: "us-east5", Project: "p", Credentials: staticToken("")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if got := srv.Paths()[0]; got != "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-test:streamRawPredict" {
		t.Fatalf("path %s", got)
	}
}

// TestGooglesClientSendsNoTraceHeaders pins the default HTTP client
// (none given): Google's, with the credentials' token, but without the
// OpenCensus and OpenTelemetry transports that add a header naming a new
// random trace to every request (and cost a round ~35 µs).
func TestGooglesClientSendsNoTraceHeaders(t *testing.T) {
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got http.Header
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test"})}
	p, err := New(Config{Config: anthropic.Config{BaseURL: front.URL, MaxRetries: -1}, Region: "us-east5", Project: "test-project", Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), providertest.SampleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if auth := got.Get("Authorization"); auth != "Bearer ya29.test" {
		t.Errorf("Authorization %q, want the credentials' token", auth)
	}
	for _, h := range []string{"X-Cloud-Trace-Context", "Traceparent", "Tracestate"} {
		if v := got.Get(h); v != "" {
			t.Errorf("%s: %q sent; Google's telemetry transports should be off", h, v)
		}
	}
}
