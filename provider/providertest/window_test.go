package providertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	osdk "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/provider/providertest"
)

var wires = []string{"anthropic", "openai"}

func newServer(t *testing.T, wire string, steps ...providertest.Step) *providertest.Server {
	if wire == "openai" {
		return providertest.NewOpenAI(t, steps...)
	}
	return providertest.NewAnthropic(t, steps...)
}

// sdkSend sends one user message of text with room for a maxTokens answer
// through the wire's own SDK client, no retries, and returns its error.
// legacy sends OpenAI's max_tokens instead of max_completion_tokens.
func sdkSend(t *testing.T, wire string, srv *providertest.Server, text string, maxTokens int64, legacy bool) error {
	t.Helper()
	ctx := context.Background()
	if wire == "anthropic" {
		c := asdk.NewClient(aoption.WithAPIKey("k"), aoption.WithBaseURL(srv.URL), aoption.WithMaxRetries(0))
		_, err := c.Messages.New(ctx, asdk.MessageNewParams{Model: "claude-test", MaxTokens: maxTokens,
			Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock(text))}})
		return err
	}
	c := osdk.NewClient(ooption.WithAPIKey("k"), ooption.WithBaseURL(srv.URL), ooption.WithMaxRetries(0))
	p := osdk.ChatCompletionNewParams{Model: "gpt-test", Messages: []osdk.ChatCompletionMessageParamUnion{osdk.UserMessage(text)}}
	if legacy {
		p.MaxTokens = osdk.Int(maxTokens)
	} else {
		p.MaxCompletionTokens = osdk.Int(maxTokens)
	}
	_, err := c.Chat.Completions.New(ctx, p)
	return err
}

func TestWindowRefusesWithTheProvidersOwnError(t *testing.T) {
	const room = 1000
	text := strings.Repeat("a long prompt ", 300)
	tests := []struct {
		name   string
		wire   string
		legacy bool
		window func(n int) int // the window, given the request's tokens
		want   func(n, w int) string
	}{
		{"anthropic, the prompt alone over the window", "anthropic", false,
			func(n int) int { return n - 1 },
			func(n, w int) string { return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, w) }},
		{"anthropic, the prompt and max_tokens over the window", "anthropic", false,
			func(n int) int { return n + room/2 },
			func(n, w int) string {
				return fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", n, room, w)
			}},
		{"openai, the messages alone over the window", "openai", false,
			func(n int) int { return n - 1 },
			func(n, w int) string {
				return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", w, n)
			}},
		{"openai, the messages and max_completion_tokens over the window", "openai", false,
			func(n int) int { return n + room/2 },
			func(n, w int) string {
				return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", w, n+room, n, room)
			}},
		{"openai, the messages and legacy max_tokens over the window", "openai", true,
			func(n int) int { return n + room/2 },
			func(n, w int) string {
				return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", w, n+room, n, room)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// a probe that refuses everything gives the request's size
			probe := newServer(t, tc.wire)
			probe.Window = 1
			_ = sdkSend(t, tc.wire, probe, text, room, tc.legacy)
			n := providertest.Tokens(probe.Requests()[0])
			if n < 500 {
				t.Fatalf("the request counts %d tokens; the test wants a long one", n)
			}
			w := tc.window(n)
			srv := newServer(t, tc.wire, providertest.Step{Text: "unused"})
			srv.Window = w
			err := sdkSend(t, tc.wire, srv, text, room, tc.legacy)
			want := tc.want(n, w)
			if tc.wire == "anthropic" {
				var e *asdk.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T), want an *anthropic.Error", err, err)
				}
				if e.StatusCode != 400 || e.Type() != "invalid_request_error" || e.Message != want {
					t.Fatalf("got %d %q %q\nwant 400 invalid_request_error %q", e.StatusCode, e.Type(), e.Message, want)
				}
			} else {
				var e *osdk.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T), want an *openai.Error", err, err)
				}
				if e.StatusCode != 400 || e.Type != "invalid_request_error" || e.Code != "context_length_exceeded" || e.Param != "messages" || e.Message != want {
					t.Fatalf("got %d %q %q %q %q\nwant 400 invalid_request_error context_length_exceeded messages %q", e.StatusCode, e.Type, e.Code, e.Param, e.Message, want)
				}
			}
			if srv.Refused() != 1 || len(srv.Requests()) != 1 {
				t.Fatalf("refused %d of %d requests, want 1 of 1", srv.Refused(), len(srv.Requests()))
			}
		})
	}
}

func TestWindowFitsARequestAtItsEdge(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			probe := newServer(t, wire)
			probe.Window = 1
			_ = sdkSend(t, wire, probe, "hello", 100, false)
			n := providertest.Tokens(probe.Requests()[0])
			srv := newServer(t, wire, providertest.Step{Text: "fits"})
			srv.Window = n + 100
			if err := sdkSend(t, wire, srv, "hello", 100, false); err != nil {
				t.Fatalf("a request of exactly the window was refused: %v", err)
			}
			if srv.Refused() != 0 {
				t.Fatalf("Refused() = %d, want 0", srv.Refused())
			}
		})
	}
}

// wire is the project's own wire pointed at srv, without retries.
func wire(t *testing.T, name string, srv *providertest.Server) provider.Provider {
	t.Helper()
	var p provider.Provider
	var err error
	if name == "openai" {
		p, err = openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
	} else {
		p, err = anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func text(role history.Role, s string) history.Message {
	return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

// conversation is the request of round i (from 0) of a conversation that
// grows by an answer and a prompt each round, with a system prompt and
// tools, so that the Anthropic wire's cache markers move from request to
// request. The first prompt is the longest, so each round shares most of
// itself with the round before.
func conversation(round int, system string) provider.Request {
	req := provider.Request{Model: "m", System: system, MaxTokens: 500,
		Tools: []provider.Tool{{Name: "t--one", Description: "One.", InputSchema: []byte(`{"type":"object"}`)},
			{Name: "t--two", Description: "Two.", InputSchema: []byte(`{"type":"object"}`)}}}
	for i := 0; i <= round; i++ {
		if i > 0 {
			req.Messages = append(req.Messages, text(history.Assistant, fmt.Sprintf("answer %d", i)))
		}
		words := 100
		if i == 0 {
			words = 600
		}
		req.Messages = append(req.Messages, text(history.User, fmt.Sprintf("prompt %d: %s", i, strings.Repeat("words ", words))))
	}
	return req
}

// sharedPrefix is how many leading bytes a and b have in common.
func sharedPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func TestCacheReportsTheLongestPrefixSharedWithARecentRequest(t *testing.T) {
	for _, name := range wires {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, name)
			srv.Cache = true
			srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok, done"} }
			p := wire(t, name, srv)
			reqs := []provider.Request{conversation(0, "Be brief."), conversation(1, "Be brief."), conversation(2, "Be brief."),
				conversation(0, "A new system prompt.")}
			var usage []history.Usage
			for _, req := range reqs {
				resp, err := p.Complete(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				usage = append(usage, *resp.Message.Usage)
			}
			sent := srv.Requests()
			canon := make([][]byte, len(sent))
			for i, b := range sent {
				canon[i] = providertest.Canonical(b)
			}
			wantRead := []int{0, sharedPrefix(canon[1], canon[0]) / 4,
				max(sharedPrefix(canon[2], canon[0]), sharedPrefix(canon[2], canon[1])) / 4,
				max(sharedPrefix(canon[3], canon[0]), sharedPrefix(canon[3], canon[1]), sharedPrefix(canon[3], canon[2])) / 4}
			for i, u := range usage {
				total := providertest.Tokens(sent[i])
				if u.CacheRead != wantRead[i] || u.Input != total-wantRead[i] || u.CacheWrite != 0 {
					t.Errorf("request %d: usage %+v, want cache read %d, input %d of %d", i, u, wantRead[i], total-wantRead[i], total)
				}
				if u.Output != len("ok, done")/4+1 {
					t.Errorf("request %d: output %d, want %d", i, u.Output, len("ok, done")/4+1)
				}
			}
			// Each round reads all of the round before from the cache but
			// its closing bytes (the end of its last message and the
			// members after the messages: under 32 tokens on either wire
			// this test runs),
			// wherever the wire put its cache markers.
			for i := 1; i <= 2; i++ {
				prev := providertest.Tokens(sent[i-1])
				if usage[i].CacheRead < prev-32 {
					t.Errorf("request %d reads %d tokens from the cache, want nearly all %d of request %d", i, usage[i].CacheRead, prev, i-1)
				}
			}
			if name == "anthropic" && strings.Count(string(sent[1]), "cache_control") == 0 {
				t.Fatal("the Anthropic wire sent no cache markers; the test no longer covers moving markers")
			}
			// a new system prompt keeps the model and tools, no more
			if usage[3].CacheRead*2 >= providertest.Tokens(sent[3]) {
				t.Errorf("request 3 changed its system prompt yet reads %d of %d tokens from the cache", usage[3].CacheRead, providertest.Tokens(sent[3]))
			}
		})
	}
}

func TestStatsSumTheAnsweredRequests(t *testing.T) {
	for _, name := range wires {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, name,
				providertest.Step{Text: "one"},
				providertest.Step{Status: 429},
				providertest.Step{Text: "two"},
				providertest.Step{Text: "three", Input: 7, CacheRead: 5, Output: 2})
			srv.Window = 3000
			srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "four"} }
			p := wire(t, name, srv)
			reqs := []provider.Request{conversation(0, "S."), conversation(1, "S."), conversation(1, "S."),
				conversation(2, "S."), conversation(0, "Other."), conversation(40, "S.")}
			var reported []history.Usage
			for i, req := range reqs {
				resp, err := p.Complete(context.Background(), req, nil)
				if i == 1 || i == 5 {
					if err == nil {
						t.Fatalf("request %d was answered, want an error", i)
					}
					continue
				}
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				reported = append(reported, *resp.Message.Usage)
			}
			want := providertest.Stats{Requests: 4, Refused: 1, Breaks: 1}
			for _, u := range reported {
				want.Input += u.Input + u.CacheRead + u.CacheWrite
				want.CacheRead += u.CacheRead
				want.Output += u.Output
			}
			sent := srv.Requests()
			for _, i := range []int{0, 2, 3, 4} {
				want.Largest = max(want.Largest, providertest.Tokens(sent[i]))
			}
			if got := srv.Stats(); got != want {
				t.Fatalf("Stats() = %+v\nwant       %+v", got, want)
			}
			if reported[2] != (history.Usage{Input: 7, CacheRead: 5, Output: 2}) {
				t.Fatalf("a step's own usage was reported as %+v", reported[2])
			}
			if len(sent) != 6 {
				t.Fatalf("%d requests recorded, want 6 (the refused one too)", len(sent))
			}
		})
	}
}

func TestStepUsageIsKeptAsDeclared(t *testing.T) {
	tests := []struct {
		name  string
		cache bool
		step  providertest.Step
		want  history.Usage
	}{
		{"declared usage, cache on", true, providertest.Step{Text: "x", Input: 11, CacheRead: 4, Output: 3}, history.Usage{Input: 11, CacheRead: 4, Output: 3}},
		{"output alone declared, cache on", true, providertest.Step{Text: "x", Output: 9}, history.Usage{Output: 9}},
		{"nothing declared, cache off", false, providertest.Step{Text: "x"}, history.Usage{}},
	}
	for _, tc := range tests {
		for _, name := range wires {
			t.Run(tc.name+", "+name, func(t *testing.T) {
				srv := newServer(t, name, tc.step)
				srv.Cache = tc.cache
				resp, err := wire(t, name, srv).Complete(context.Background(), conversation(0, "S."), nil)
				if err != nil {
					t.Fatal(err)
				}
				if *resp.Message.Usage != tc.want {
					t.Fatalf("usage %+v, want %+v", *resp.Message.Usage, tc.want)
				}
			})
		}
	}
}

func TestRefusedRequestTakesNoStep(t *testing.T) {
	for _, name := range wires {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, name, providertest.Step{Text: "the first step"})
			srv.Window = 2000
			p := wire(t, name, srv)
			if _, err := p.Complete(context.Background(), conversation(20, "S."), nil); err == nil {
				t.Fatal("a request over the window was answered")
			}
			resp, err := p.Complete(context.Background(), conversation(0, "S."), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Message.Parts[0].Text; got != "the first step" {
				t.Fatalf("the request after the refused one got %q, want the first step", got)
			}
			if srv.Refused() != 1 || len(srv.Requests()) != 2 {
				t.Fatalf("refused %d of %d requests, want 1 of 2", srv.Refused(), len(srv.Requests()))
			}
		})
	}
}

func TestCanonicalStripsCacheMarksAndPutsThePrefixFirst(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"a marker after a member", `{"messages":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`,
			`{"messages":[{"type":"text","text":"hi"}]}`},
		{"a marker before a member", `{"system":[{"cache_control":{"type":"ephemeral"},"text":"s","type":"text"}]}`,
			`{"system":[{"text":"s","type":"text"}]}`},
		{"a marker with a ttl", `{"tools":[{"name":"t","cache_control":{"type":"ephemeral","ttl":"1h"}}]}`,
			`{"tools":[{"name":"t"}]}`},
		{"marker text inside a string is content", `{"messages":["a \",\"cache_control\":{\"type\":\"ephemeral\"} b"]}`,
			`{"messages":["a \",\"cache_control\":{\"type\":\"ephemeral\"} b"]}`},
		{"model, tools, system, messages first, the rest in order",
			`{"messages":[1],"max_tokens":5,"model":"m","system":"s","tools":[2],"stream":true}`,
			`{"model":"m","tools":[2],"system":"s","messages":[1],"max_tokens":5,"stream":true}`},
		{"whitespace compacted, not in strings", "{ \"model\" : \"m m\",\n \"messages\": [ 1, \"a \\\" b\" ] }", `{"model":"m m","messages":[1,"a \" b"]}`},
		{"strings holding commas, braces and escaped quotes",
			`{"stream":true,"messages":[{"text":"},{\",\"model\":\"x\"]"}],"k\"ey":"v,}"}`,
			`{"messages":[{"text":"},{\",\"model\":\"x\"]"}],"stream":true,"k\"ey":"v,}"}`},
		{"an empty object", `{}`, `{}`},
		{"an object cut short stays as it is", `{"model":"m","messages":[1`, `{"model":"m","messages":[1`},
		{"bytes after the object", `{"messages":[1],"model":"m"}x}`, `{"messages":[1],"model":"m"}x}`},
		{"a member without a value", `{"model":,"messages":[1]}`, `{"model":,"messages":[1]}`},
		{"not an object", `[1, "cache_control"]`, `[1, "cache_control"]`},
		{"not JSON", `not json,"cache_control":{"type":"ephemeral"}`, `not json`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(providertest.Canonical([]byte(tc.body))); got != tc.want {
				t.Fatalf("Canonical(%s)\n = %s\nwant %s", tc.body, got, tc.want)
			}
		})
	}
}

func TestTokensAreCanonicalBytesOverFourRoundedUp(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{`{}`, 1},
		{`{"a":1}`, 2},      // 7 bytes
		{`{"ab":12}`, 3},    // 9 bytes
		{`{"abc":123}`, 3},  // 11 bytes
		{`{"abcd":123}`, 3}, // 12 bytes
		{`{"abcd":123,"cache_control":{"type":"ephemeral"}}`, 3},
		{``, 0},
	}
	for _, tc := range tests {
		if got := providertest.Tokens([]byte(tc.body)); got != tc.want {
			t.Errorf("Tokens(%s) = %d, want %d", tc.body, got, tc.want)
		}
	}
}

func TestStatsWithoutWindowOrCacheCountOnlyDeclaredUsage(t *testing.T) {
	srv := providertest.NewAnthropic(t, providertest.Step{Text: "a", Input: 10, CacheRead: 20, Output: 3}, providertest.Step{Text: "b"})
	p := wire(t, "anthropic", srv)
	for _, req := range []provider.Request{conversation(0, "S."), conversation(0, "Other.")} {
		if _, err := p.Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := providertest.Stats{Requests: 2, Input: 30, CacheRead: 20, Output: 3}
	if got := srv.Stats(); got != want {
		t.Fatalf("Stats() = %+v, want %+v (no breaks, no sizes: nothing measured)", got, want)
	}
}

// BenchmarkServerRequest40k is one request of about 45,000 tokens (180 KB,
// a little over the 40,000-token test window) through the server, answered from the script, with
// the server's measures off (the floor) and on: Canonical, the prefix
// compared with the 8 requests remembered, the usage worked out.
func BenchmarkServerRequest40k(b *testing.B) {
	req := conversation(0, "S.")
	for i := 1; len(req.Messages) < 2*130; i++ {
		req.Messages = append(req.Messages, text(history.Assistant, "ok"), text(history.User, strings.Repeat("a result line of a tool\n", 50)))
	}
	body, err := anthropic.Body(req, false)
	if err != nil {
		b.Fatal(err)
	}
	for _, measure := range []bool{false, true} {
		b.Run(fmt.Sprintf("measure=%v", measure), func(b *testing.B) {
			srv := providertest.NewAnthropic(b)
			srv.Cache = measure
			srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportMetric(float64(providertest.Tokens(body)), "tokens")
		})
	}
}

func TestGrowingConversationIsCachedUntilItOutgrowsTheWindow(t *testing.T) {
	const window = 40_000
	for _, name := range wires {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, name)
			srv.Window = window
			srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "next"} }
			p := wire(t, name, srv)
			req := provider.Request{Model: "m", System: "S.", MaxTokens: 4096}
			var err error
			rounds := 0
			for ; rounds < 100 && err == nil; rounds++ {
				req.Messages = append(req.Messages, text(history.User, fmt.Sprintf("round %d %s", rounds, strings.Repeat("x", 4000))))
				var resp provider.Response
				if resp, err = p.Complete(context.Background(), req, nil); err == nil {
					req.Messages = append(req.Messages, resp.Message)
				}
			}
			sent := srv.Requests()
			last := sent[len(sent)-1]
			if err == nil || providertest.Tokens(last)+4096 <= window || providertest.Tokens(sent[len(sent)-2])+4096 > window {
				t.Fatalf("after %d rounds: %v; want the first request over the window refused", rounds, err)
			}
			st := srv.Stats()
			if st.Refused != 1 || st.Requests != len(sent)-1 || st.Breaks != 0 || st.CacheRatio() < 0.85 {
				t.Fatalf("Stats() = %+v (cache ratio %.2f), want 1 refused, %d answered, no break, most input read from the cache", st, st.CacheRatio(), len(sent)-1)
			}
			t.Logf("%s: refused at request %d of %d tokens; cache ratio %.3f", name, len(sent)-1, providertest.Tokens(last), st.CacheRatio())
		})
	}
}

func TestBreaksCountRequestsThatDropTheCachedPrefix(t *testing.T) {
	cleared := conversation(3, "S.")
	cleared.Messages[0] = text(history.User, "prompt 0 was cleared to save room")
	bigRound := conversation(0, "S.")
	bigRound.Messages = append(bigRound.Messages, text(history.Assistant, "ok"), text(history.User, strings.Repeat("a big result ", 2000)))
	tests := []struct {
		name string
		reqs []provider.Request
		want int
	}{
		{"a growing conversation", []provider.Request{conversation(0, "S."), conversation(1, "S."), conversation(2, "S."), conversation(3, "S.")}, 0},
		{"a round bigger than all before it", []provider.Request{conversation(0, "S."), bigRound}, 0},
		{"the oldest prompt taken out", []provider.Request{conversation(0, "S."), conversation(1, "S."), conversation(2, "S."), cleared}, 1},
		{"two conversations interleaved", []provider.Request{conversation(0, "A."), conversation(0, "B."), conversation(1, "A."), conversation(1, "B."), conversation(2, "A."), conversation(2, "B.")}, 1},
		{"the same request again", []provider.Request{conversation(1, "S."), conversation(1, "S.")}, 0},
	}
	for _, tc := range tests {
		for _, name := range wires {
			t.Run(tc.name+", "+name, func(t *testing.T) {
				srv := newServer(t, name)
				srv.Cache = true
				srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
				p := wire(t, name, srv)
				for _, req := range tc.reqs {
					if _, err := p.Complete(context.Background(), req, nil); err != nil {
						t.Fatal(err)
					}
				}
				if got := srv.Stats().Breaks; got != tc.want {
					t.Fatalf("Breaks = %d, want %d", got, tc.want)
				}
			})
		}
	}
}
