package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAThinkingBudgetThatTheAPIWouldRefuseIsAnErrorNamingTheNumbers(t *testing.T) {
	for _, c := range []struct {
		th        Thinking
		maxTokens int
		want      string // "" for no error
	}{
		{Thinking{}, 8192, ""},
		{Thinking{Budget: 1024}, 8192, ""},
		{Thinking{Budget: 8191}, 8192, ""},
		{Thinking{Adaptive: true}, 1, ""},
		{Thinking{Budget: 20000, Interleaved: true}, 8192, ""},
		{Thinking{Budget: 1023}, 8192, "thinking budget 1023 tokens is below the API's minimum of 1024"},
		{Thinking{Budget: -1}, 8192, "thinking budget -1: give a number of tokens, at least 1024"},
		{Thinking{Budget: 8192}, 8192, "thinking budget 8192 tokens must be less than max_tokens 8192"},
		{Thinking{Budget: 10000}, 4096, "thinking budget 10000 tokens must be less than max_tokens 4096"},
		{Thinking{Budget: 2000, Adaptive: true}, 8192, "either a budget (2000 tokens) or adaptive, not both"},
		{Thinking{Adaptive: true, Interleaved: true}, 8192, "interleaved thinking asks for a thinking budget"},
		{Thinking{Display: "summarized"}, 8192, `thinking display "summarized" without thinking`},
		{Thinking{Adaptive: true, Display: "full"}, 8192, `thinking display "full": want summarized or omitted`},
	} {
		req := providertest.SampleRequest()
		req.MaxTokens = c.maxTokens
		_, err := BodyWith(req, false, c.th)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v with max_tokens %d: err = %v, want %q", c.th, c.maxTokens, err, c.want)
		}
	}
	// New refuses what can be refused without a request
	if _, err := New(Config{APIKey: "k", Thinking: Thinking{Budget: 100}}); err == nil || !strings.Contains(err.Error(), "100 tokens is below") {
		t.Fatalf("New: err = %v", err)
	}
}

func TestTheThinkingParameterIsSentAsTheAPITakesIt(t *testing.T) {
	for _, c := range []struct {
		th   Thinking
		want string
	}{
		{Thinking{Budget: 2048}, `{"budget_tokens":2048,"type":"enabled"}`},
		{Thinking{Budget: 2048, Display: "omitted"}, `{"budget_tokens":2048,"display":"omitted","type":"enabled"}`},
		{Thinking{Adaptive: true}, `{"type":"adaptive"}`},
		{Thinking{Adaptive: true, Display: "summarized"}, `{"display":"summarized","type":"adaptive"}`},
	} {
		req := providertest.SampleRequest()
		req.MaxTokens = 4096
		b, err := BodyWith(req, false, c.th)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(v["thinking"]); got != c.want {
			t.Errorf("%+v: thinking %s, want %s", c.th, got, c.want)
		}
		// the parameters the API refuses or limits with thinking on are
		// never sent
		for _, k := range []string{"temperature", "top_k", "top_p", "tool_choice"} {
			if _, ok := v[k]; ok {
				t.Errorf("%+v: the request sends %s", c.th, k)
			}
		}
	}
	b, _ := Body(providertest.SampleRequest(), false)
	if strings.Contains(string(b), `"thinking"`) {
		t.Fatalf("a request without thinking asks for it: %s", b)
	}
}

// thinkingRequest is sampleRequest whose answers thought: a thinking
// block first, a redacted one between the two calls (interleaved), a
// reasoning part of another wire (never sent here) and, in the last
// answer, thinking after its call that the API would refuse as the final
// block (kept in the store, not sent).
func thinkingRequest() provider.Request {
	req := providertest.SampleRequest()
	req.MaxTokens = 4096
	a := req.Messages[1]
	a.Parts = []history.Part{
		reasoningPart("thinking", "The user wants a.txt <&> \"quoted\"\nthen the image.", "EqQBCkYIBRgCKkA+sig==", ""),
		a.Parts[0], a.Parts[1],
		reasoningPart("redacted_thinking", "", "", "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"),
		{Type: history.ReasoningPart, Wire: "openai-responses", Text: "elsewhere", Raw: json.RawMessage(`{"type":"reasoning","encrypted_content":"x"}`)},
		a.Parts[2],
	}
	req.Messages[1] = a
	b := req.Messages[3]
	b.Parts = append([]history.Part{reasoningPart("thinking", "Once more.", "sig-2", "")}, b.Parts...)
	b.Parts = append(b.Parts, reasoningPart("thinking", "cut short", "", ""))
	req.Messages[3] = b
	return req
}

// The request bytes with thinking on and thinking blocks in the answers,
// pinned.
func TestRequestBytesWithThinkingArePinned(t *testing.T) {
	got, err := BodyWith(thinkingRequest(), true, Thinking{Budget: 1000 + 24})
	if err != nil {
		t.Fatal(err)
	}
	providertest.Golden(t, "testdata/request_thinking.golden.json", got, *update)
}

func TestReasoningIsSentBackAsStoredInItsPlaceAndOnlyThisWiresOwn(t *testing.T) {
	req := thinkingRequest()
	b, err := BodyWith(req, false, Thinking{Adaptive: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{1, 3} {
		for _, p := range req.Messages[m].Parts {
			if p.Type == history.ReasoningPart && p.Wire == Wire && p.Text != "cut short" && !strings.Contains(string(b), string(p.Raw)) {
				t.Errorf("the request lacks %s", p.Raw)
			}
		}
	}
	msgs := messages(t, req)
	var types []string
	for _, blk := range msgs[1]["content"].([]any) {
		types = append(types, blk.(map[string]any)["type"].(string))
	}
	if got := strings.Join(types, ","); got != "thinking,text,tool_use,redacted_thinking,tool_use" {
		t.Fatalf("the first answer's blocks: %s", got)
	}
	last := msgs[3]["content"].([]any)
	if len(last) != 2 || last[0].(map[string]any)["signature"] != "sig-2" || last[1].(map[string]any)["type"] != "tool_use" {
		t.Fatalf("the last answer: %v (its trailing thinking must stay out)", last)
	}
	if strings.Contains(string(b), "encrypted_content") || strings.Contains(string(b), "elsewhere") {
		t.Fatal("another wire's reasoning was sent")
	}
	// an answer that is nothing but thinking is not sent at all
	req.Messages = append(req.Messages[:5:5], history.Message{Role: history.Assistant, Parts: []history.Part{reasoningPart("thinking", "hmm", "s", "")}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go on"}}})
	if msgs := messages(t, req); len(msgs) != 5 {
		t.Fatalf("%d messages sent, want 5 (the thinking-only answer left out, the prompts merged)", len(msgs))
	}
}

// headerRecorder records the anthropic-beta header of each request.
type headerRecorder struct {
	mu    sync.Mutex
	betas []string
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.betas = append(h.betas, strings.Join(r.Header.Values("anthropic-beta"), ","))
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestThinkingBlocksAreStoredInTheOrderTheyCameAndStreamedToOnThinking(t *testing.T) {
	step := providertest.Step{
		Thinking: []providertest.Thinking{
			{Text: "First I look — at a.txt.", Signature: "sig-A"},
			{Redacted: "REDACTED-DATA"},
			{Text: "Then b.", Signature: "sig-B", BeforeCall: 1},
		},
		Text:      "Reading both.",
		ToolCalls: []providertest.ToolCall{{ID: "toolu_a", Name: "workspace--read", Input: `{"path":"a.txt"}`}, {ID: "toolu_b", Name: "workspace--read", Input: `{"path":"b.txt"}`}},
	}
	for _, noStream := range []bool{false, true} {
		for _, interleaved := range []bool{false, true} {
			srv := providertest.NewAnthropic(t, step)
			rec := &headerRecorder{}
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: noStream, MaxRetries: -1, HTTPClient: &http.Client{Transport: rec},
				Thinking: Thinking{Budget: 1024, Interleaved: interleaved}})
			if err != nil {
				t.Fatal(err)
			}
			req := providertest.SampleRequest()
			req.MaxTokens = 4096
			var thought []string
			req.OnThinking = func(s string) { thought = append(thought, s) }
			var text strings.Builder
			resp, err := p.Complete(context.Background(), req, func(s string) { text.WriteString(s) })
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, part := range resp.Message.Parts {
				kinds = append(kinds, string(part.Type))
			}
			if got := strings.Join(kinds, ","); got != "reasoning,reasoning,text,tool_call,reasoning,tool_call" {
				t.Fatalf("noStream %v: parts %s", noStream, got)
			}
			parts := resp.Message.Parts
			if parts[0].Wire != Wire || parts[0].Text != "First I look — at a.txt." || string(parts[0].Raw) != `{"type":"thinking","thinking":"First I look — at a.txt.","signature":"sig-A"}` {
				t.Fatalf("thinking part %+v, raw %s", parts[0], parts[0].Raw)
			}
			if parts[1].Text != "" || string(parts[1].Raw) != `{"type":"redacted_thinking","data":"REDACTED-DATA"}` {
				t.Fatalf("redacted part %+v, raw %s", parts[1], parts[1].Raw)
			}
			if string(parts[4].Raw) != `{"type":"thinking","thinking":"Then b.","signature":"sig-B"}` {
				t.Fatalf("interleaved part raw %s", parts[4].Raw)
			}
			if strings.Join(thought, "") != "First I look — at a.txt.Then b." || text.String() != "Reading both." {
				t.Fatalf("noStream %v: OnThinking got %q, onText %q", noStream, thought, text.String())
			}
			if !noStream && len(thought) < 3 {
				t.Fatalf("the thinking did not stream: %q", thought)
			}
			want := ""
			if interleaved {
				want = InterleavedBeta
			}
			if rec.betas[0] != want {
				t.Fatalf("interleaved %v: anthropic-beta %q", interleaved, rec.betas[0])
			}
			// and sent back as it came, in the next request
			req.Messages = append(req.Messages, resp.Message)
			b, err := BodyWith(req, false, Thinking{Budget: 1024})
			if err != nil {
				t.Fatal(err)
			}
			want = `{"role":"assistant","content":[` + string(parts[0].Raw) + "," + string(parts[1].Raw) + `,{"type":"text","text":"Reading both."},`
			if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"input":{"path":"a.txt"}},`+string(parts[4].Raw)+`,{"type":"tool_use","id":"toolu_b"`) {
				t.Fatalf("the answer was not sent back as it came:\n%s", b)
			}
		}
	}
}

// The thinking blocks sent are the SDK's own ThinkingBlockParam and
// RedactedThinkingBlockParam shapes.
func TestThinkingBlocksMatchTheSDKsShapes(t *testing.T) {
	got := messages(t, thinkingRequest())[1]["content"].([]any)
	for i, want := range map[int]sdk.ContentBlockParamUnion{
		0: sdk.NewThinkingBlock("EqQBCkYIBRgCKkA+sig==", "The user wants a.txt <&> \"quoted\"\nthen the image."),
		3: sdk.NewRedactedThinkingBlock("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"),
	} {
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var w any
		_ = json.Unmarshal(raw, &w)
		if a, b := mustJSON(got[i]), mustJSON(w); a != b {
			t.Errorf("block %d:\n got %s\nwant %s", i, a, b)
		}
	}
}

// A change of thinking settings invalidates the API's cached messages, so
// the cache settings stored with a conversation name them; without
// thinking they are the words they always were.
func TestCacheSettingsNameTheThinking(t *testing.T) {
	for _, c := range []struct {
		th   Thinking
		want string
	}{
		{Thinking{}, cacheSettings},
		{Thinking{Budget: 2048}, cacheSettings + "; thinking budget 2048 tokens"},
		{Thinking{Budget: 2048, Interleaved: true}, cacheSettings + "; thinking budget 2048 tokens, interleaved"},
		{Thinking{Adaptive: true, Display: "summarized"}, cacheSettings + "; thinking adaptive, display summarized"},
	} {
		p, err := New(Config{APIKey: "k", Thinking: c.th})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.CacheSettings(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.th, got, c.want)
		}
	}
}
