package anthropic

import (
	"context"
	"net/http"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/internal/send/sendtest"
)

// sendCases are scripts of answers, each sent for both through the SDK
// and directly: successes, refusals of every shape the wire reads, and
// retries (with retry-after-ms: 0, so that the SDK does not wait).
func sendCases(base string) map[string][]sendtest.Answer {
	now := map[string]string{"retry-after-ms": "0"}
	sse := map[string]string{"Content-Type": "text/event-stream"}
	ids := map[string]string{"request-id": "req_1", "anthropic-workspace-id": "wrk_1"}
	return map[string][]sendtest.Answer{
		"a stream":              {{Status: 200, Header: sse, Body: "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}},
		"a 400 with its IDs":    {{Status: 400, Header: ids, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`}},
		"too long":              {{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`}},
		"a 413 not JSON":        {{Status: 413, Body: "<html>Request Entity Too Large</html>"}},
		"overloaded, retried":   {{Status: 529, Header: now, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}},
		"429 then a stream":     {{Status: 429, Header: now}, {Status: 200, Header: sse, Body: "data: {}\n\n"}},
		"408 409 then a 500":    {{Status: 408, Header: now}, {Status: 409, Header: now}, {Status: 500, Header: now, Body: `{"type":"error","error":{"type":"api_error","message":"down"}}`}},
		"told not to retry":     {{Status: 503, Header: map[string]string{"x-should-retry": "false"}, Body: `{"type":"error","error":{"type":"api_error","message":"no"}}`}},
		"told to retry a 400":   {{Status: 400, Header: map[string]string{"x-should-retry": "true", "retry-after-ms": "0"}}, {Status: 200, Body: "ok"}},
		"a redirect in place":   {{Status: 307, Header: map[string]string{"Location": base + "/v1/moved"}}, {Status: 200, Body: "moved"}},
		"a redirect then a 400": {{Status: 308, Header: map[string]string{"Location": base + "/v2/messages"}}, {Status: 400, Body: `{"type":"error","error":{"type":"not_found_error","message":"moved"}}`}},
	}
}

func TestTheWireSendsWhatTheSDKSends(t *testing.T) {
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Extra: one")
	srv := sendtest.NewServer(t)
	for _, th := range []Thinking{{}, {Budget: 2048, Interleaved: true}} {
		p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: 2, Thinking: th})
		if err != nil {
			t.Fatal(err)
		}
		client := sdkClient(t, Config{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: 2})
		checkSendsAsTheSDK(t, p, client, srv)
		// and a copy asking for other thinking, whose headers change
		q, err := p.WithThinking(Thinking{Budget: 4096, Interleaved: !th.Interleaved})
		if err != nil {
			t.Fatal(err)
		}
		checkSendsAsTheSDK(t, q, client, srv)
	}
}

// checkSendsAsTheSDK runs every case of sendCases through the SDK's
// client as New made it for p, and p's Sender.
func checkSendsAsTheSDK(t *testing.T, p *Provider, client sdk.Client, srv *sendtest.Server) {
	t.Helper()
	sdkPost, direct := posts(p, client, []byte(`{"messages":[],"stream":true,"max_tokens":1,"model":"m"}`))
	viaSDK, viaSender := sendtest.Described(sdkPost, sdkDescribe), sendtest.Described(direct, describe)
	for name, answers := range sendCases(srv.URL) {
		t.Run(name, func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaSender) })
	}
}

func TestTheSDKsHeadersAreSent(t *testing.T) {
	srv := sendtest.NewServer(t)
	p, err := New(Config{APIKey: "test-key", BaseURL: srv.URL, Thinking: Thinking{Budget: 2048, Interleaved: true}})
	if err != nil {
		t.Fatal(err)
	}
	h := p.send.Target().Header
	for name, want := range map[string]string{"Authorization": "Bearer test-key", "Anthropic-Beta": InterleavedBeta, "Content-Type": "application/json", "X-Stainless-Retry-Count": "0"} {
		if h.Get(name) != want {
			t.Errorf("%s: %q, want %q", name, h.Get(name), want)
		}
	}
	if h.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version")
	}
	q, _ := p.WithThinking(Thinking{})
	if b := q.send.Target().Header.Values("Anthropic-Beta"); len(b) != 0 {
		t.Errorf("without interleaved thinking the beta is still sent: %v", b)
	}
}

// posts are the SDK's post of body through client as Complete made it
// before the Sender, and p's Sender's.
func posts(p *Provider, client sdk.Client, body []byte) (sdkPost, direct sendtest.Post) {
	ctx := context.Background()
	sdkPost = func() (*http.Response, error) {
		opts := append([]option.RequestOption{option.WithRequestBody("application/json", body)}, sdkThinkingOptions(p.cfg.Thinking)...)
		var resp *http.Response
		err := client.Post(ctx, path, nil, &resp, opts...)
		return resp, err
	}
	return sdkPost, func() (*http.Response, error) { return p.send.Post(ctx, body) }
}

// BenchmarkPost posts one body and reads the answer through the SDK's
// request plumbing (sdk) and directly (direct), side by side on one
// loopback server: the cost the Sender takes off each request.
func BenchmarkPost(b *testing.B) {
	srv := sendtest.NewServer(b)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	sdkPost, direct := posts(p, sdkClient(b, Config{APIKey: "k", BaseURL: srv.URL}), []byte(`{"messages":[],"stream":true,"max_tokens":1,"model":"m"}`))
	sendtest.Bench(b, sdkPost, direct)
}
