package vertex

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	sdkvertex "github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkWire is the wire as it was before Platform.Send: the first-party
// body, rewritten and routed by anthropic-sdk-go's vertex middleware
// (vertex.WithCredentials), which also authorized the HTTP client. What
// New sends is held to what it sent.
func sdkWire(t testing.TB, cfg Config) *anthropic.OnPlatform {
	t.Helper()
	wire := cfg.Config
	base, err := hostOnly(wire.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	wire.BaseURL = base
	p, err := anthropic.NewOn(anthropic.Platform{
		Name:    "vertex",
		Version: Version,
		Options: []option.RequestOption{sdkvertex.WithCredentials(context.Background(), cfg.Region, cfg.Project, cfg.Credentials)},
	}, wire)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sent is one request as it left the client: its method, URL, headers and
// body.
type sent struct {
	method, url string
	header      http.Header
	body        []byte
}

// wiretap records each request whole, then sends it on to the fake at to
// (whatever its host), or, with no fake, answers it in process with a
// short message.
type wiretap struct {
	mu   sync.Mutex
	to   *url.URL
	sent []sent
}

func (w *wiretap) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.sent = append(w.sent, sent{r.Method, r.URL.String(), r.Header.Clone(), body})
	w.mu.Unlock()
	if w.to == nil {
		const answer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(answer)), Request: r}, nil
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.URL.Scheme, r.URL.Host, r.Host = w.to.Scheme, w.to.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

// exchange sends req on ours and on the SDK's wire, and returns what each
// sent (a zero sent when nothing was) and each one's error ("" for none).
func exchange(t testing.TB, tap *wiretap, ours, sdks provider.Provider, req provider.Request) (got [2]sent, errs [2]string) {
	t.Helper()
	for i, p := range []provider.Provider{ours, sdks} {
		tap.mu.Lock()
		n := len(tap.sent)
		tap.mu.Unlock()
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			errs[i] = err.Error()
		}
		tap.mu.Lock()
		if len(tap.sent) > n {
			got[i] = tap.sent[len(tap.sent)-1]
		}
		tap.mu.Unlock()
	}
	return got, errs
}

// sameExchange fails unless both wires sent the same request (method,
// URL, headers, body) or refused it alike.
func sameExchange(t testing.TB, what string, got [2]sent, errs [2]string) {
	t.Helper()
	if errs[0] != errs[1] {
		t.Fatalf("%s: error %q\nthe SDK's middleware %q", what, errs[0], errs[1])
	}
	if got[0].method != got[1].method || got[0].url != got[1].url {
		t.Fatalf("%s: sent %s %q\nthe SDK's middleware %s %q", what, got[0].method, got[0].url, got[1].method, got[1].url)
	}
	if !bytes.Equal(got[0].body, got[1].body) {
		t.Errorf("%s: sent\n%s\nthe SDK's middleware sent\n%s", what, got[0].body, got[1].body)
	}
	if !reflect.DeepEqual(got[0].header, got[1].header) {
		t.Errorf("%s: headers sent\n%v\nthe SDK's middleware sent\n%v", what, got[0].header, got[1].header)
	}
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
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			tap := &wiretap{to: u}
			cfg := Config{
				Config:      anthropic.Config{HTTPClient: &http.Client{Transport: tap}, NoStream: tc.noStream, MaxRetries: -1, BaseURL: tc.baseURL},
				Region:      first(tc.region, "us-east5"),
				Project:     first(tc.project, "test-project"),
				Credentials: staticToken(""),
			}
			ours, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sdks := sdkWire(t, cfg)
			if ours, err = ours.WithThinking(tc.thinking); err != nil {
				t.Fatal(err)
			}
			if sdks, err = sdks.WithThinking(tc.thinking); err != nil {
				t.Fatal(err)
			}
			req := sampleRequest()
			req.Model = tc.model
			req.MaxTokens = 4096
			got, errs := exchange(t, tap, ours, sdks, req)
			sameExchange(t, tc.name, got, errs)
		})
	}
}

// FuzzTheRouteIsTheSDKs holds New's URL, body and refusals for any model
// to the SDK's vertex middleware's, answered in process.
func FuzzTheRouteIsTheSDKs(f *testing.F) {
	for _, m := range []string{"claude-test", "claude-x@20250101", "..", ".;a", "%2e%2E", ";", "a b", "\xff\xfe", "é\x80", "%3b", "./", "~!$&'()*+,;=:@", "a/b"} {
		f.Add(m, false)
	}
	tap := &wiretap{}
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
		pairs[i] = [2]provider.Provider{ours, sdkWire(f, cfg)}
	}
	f.Fuzz(func(t *testing.T, model string, noStream bool) {
		pair := pairs[0]
		if noStream {
			pair = pairs[1]
		}
		req := sampleRequest()
		req.Model = model
		// a streamed request's in-process answer, a whole message, is an
		// error: the same on both
		got, errs := exchange(t, tap, pair[0], pair[1], req)
		sameExchange(t, "model "+model, got, errs)
	})
}

// The body a request reports as sent (Request.OnBody, which the agent
// keeps for the API) is, byte for byte, what Vertex received.
func TestTheBodyReportedSentIsWhatVertexReceived(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
		p, _ := newWire(t, srv, noStream)
		req := sampleRequest()
		var reported []byte
		req.OnBody = func(b []byte) { reported = b }
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0]; !bytes.Equal(reported, got) {
			t.Fatalf("reported\n%s\nreceived\n%s", reported, got)
		}
	}
}
