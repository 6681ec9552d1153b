package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
)

// bodyCases are requests that reach every shape Body writes.
func bodyCases() map[string]provider.Request {
	text := func(role history.Role, s string) history.Message {
		return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	odd := "quotes \" and \\ back, <html> & \u2028\u2029 line seps, \x01\x1f controls, \t\r\n, é, 😀, \u00ff"
	cases := map[string]provider.Request{
		"the sample": sampleRequest(),
		"no system, no tools, records and an empty answer": {Model: "m", Messages: append(records(),
			text(history.User, "hi"), history.Message{Role: history.Assistant}, text(history.User, ""))},
		"only records": {Model: "m", MaxTokens: 5, Messages: records()},
		"nothing":      {Model: ""},
		"odd text everywhere": {Model: odd, System: odd, MaxTokens: -3, Messages: []history.Message{
			text(history.User, odd),
			{Role: history.Assistant, Parts: []history.Part{
				{Type: history.ReasoningPart, Wire: "anthropic", Text: "thinking", Raw: json.RawMessage(`{"type":"thinking"}`)},
				{Type: history.TextPart, Text: "first " + odd},
				{Type: history.TextPart, Text: ""},
				{Type: history.TextPart, Text: " second"},
				{Type: history.ToolCallPart, CallID: odd, Name: odd, Input: json.RawMessage(`{"s":"<&> \u2028 \"q\"","n":[1,2.5e3]}`)},
			}},
			{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: odd, Text: odd}}},
		}},
		"tool calls without or with bad input, errors and images": {Model: "m", MaxTokens: 100, Messages: []history.Message{
			text(history.User, "go"),
			{Role: history.Assistant, Parts: []history.Part{
				{Type: history.ToolCallPart, CallID: "c1", Name: "a"},
				provider.ToolCall("c2", "b", `{"x":`),
				provider.ToolCall("c3", "c", `{"y": [1, 2]}`),
				{Type: history.ToolCallPart, CallID: "c4", Name: "d", Input: json.RawMessage(`{}`)},
			}},
			{Role: history.User, Parts: []history.Part{
				{Type: history.ToolResultPart, CallID: "c1", Text: "error: no such file", IsError: true},
				{Type: history.ToolResultPart, CallID: "c2", Text: "", Images: []result.Image{{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}, {MIMEType: "image/png", Data: []byte("\x89PNG\r\n")}}},
				{Type: history.ToolResultPart, CallID: "c3", Text: ""},
				{Type: history.TextPart, Text: "and a word"},
				{Type: history.ToolResultPart, CallID: "c4", Text: "four", Images: []result.Image{{MIMEType: "image/gif", Data: []byte("GIF89a")}}},
			}},
			{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}},
		}},
		"tools with schemas": {Model: "m", MaxTokens: 1 << 20, Tools: []provider.Tool{
			{Name: "none", Description: "", InputSchema: json.RawMessage(`{}`)},
			{Name: "null", Description: "null schema", InputSchema: json.RawMessage(`null`)},
			{Name: "spaced", Description: "<b>bold</b> & co", InputSchema: json.RawMessage("{\n  \"type\": \"object\",\n  \"required\": [\"z\", \"a\"],\n  \"properties\": {\"z\": {\"type\": \"string\", \"description\": \"<&> \\u2028 \\/ é\"}, \"a\": {\"type\": \"integer\", \"minimum\": 1.0, \"maximum\": 1e30, \"default\": 12345678901234567890, \"multipleOf\": 0.1, \"x\": -0, \"y\": null, \"t\": true}}\n}")},
			{Name: "nested", Description: "d", InputSchema: json.RawMessage(`{"anyOf":[{"b":1,"a":[{"d":{},"c":[]}]}],"$defs":{"k":{"enum":["x","y"]}}}`)},
		}, Messages: []history.Message{text(history.User, "x")}},
	}
	return cases
}

// sent captures the bodies an SDK client sends to a loopback server.
type sent struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *sent) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"error":{"message":"captured"}}`))
}

func (s *sent) last(t *testing.T) []byte {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("nothing was sent")
	}
	b := s.bodies[len(s.bodies)-1]
	s.bodies = nil
	return b
}

// sdkSends is the body the SDK sends for the typed params of req, the way
// the wire sent them before it encoded its own: Chat.Completions.New, or
// NewStreaming with stream_options.include_usage set.
func sdkSends(t *testing.T, s *sent, url string, req provider.Request, legacy, stream bool) []byte {
	t.Helper()
	p, err := Params(req, legacy)
	if err != nil {
		t.Fatal(err)
	}
	c := sdk.NewClient(option.WithAPIKey("k"), option.WithBaseURL(url), option.WithMaxRetries(0))
	if stream {
		p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
		st := c.Chat.Completions.NewStreaming(context.Background(), p)
		for st.Next() {
		}
		st.Close()
	} else {
		_, _ = c.Chat.Completions.New(context.Background(), p)
	}
	return s.last(t)
}

func TestBodyIsWhatTheSDKSendsForParams(t *testing.T) {
	s := &sent{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	defer srv.Close()
	for name, req := range bodyCases() {
		for _, legacy := range []bool{false, true} {
			for _, stream := range []bool{false, true} {
				want := sdkSends(t, s, srv.URL, req, legacy, stream)
				got, err := Body(req, legacy, stream)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if string(got) != string(want) {
					t.Errorf("%s (legacy %v, stream %v):\n got %s\nwant %s", name, legacy, stream, got, want)
				}
				if again, _ := Body(req, legacy, stream); string(again) != string(got) {
					t.Errorf("%s: two encodings differ", name)
				}
			}
		}
	}
}

func TestCompleteSendsBodysBytes(t *testing.T) {
	s := &sent{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	defer srv.Close()
	for _, noStream := range []bool{false, true} {
		p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: noStream, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), sampleRequest(), nil); err == nil || !strings.Contains(err.Error(), "captured") {
			t.Fatalf("err = %v", err)
		}
		want, _ := Body(sampleRequest(), p.legacy, !noStream)
		if got := s.last(t); string(got) != string(want) {
			t.Fatalf("sent\n%s\nwant\n%s", got, want)
		}
	}
}

func TestASchemaThatIsNotAnObjectIsAnErrorNamingTheTool(t *testing.T) {
	for _, schema := range []string{``, `[1]`, `"s"`, `{"a":`} {
		req := sampleRequest()
		req.Tools = []provider.Tool{{Name: "bad--tool", InputSchema: json.RawMessage(schema)}}
		if _, err := Body(req, false, true); err == nil || !strings.Contains(err.Error(), "tool bad--tool: its input schema is not a JSON object") {
			t.Errorf("schema %q: err = %v", schema, err)
		}
	}
}

func TestAToolsSchemaIsKeptEncodedAndAChangedOneIsEncodedAgain(t *testing.T) {
	req := sampleRequest()
	first, _ := Body(req, false, false)
	if _, ok := schemas.m[string(req.Tools[0].InputSchema)]; !ok {
		t.Fatal("the schema was not kept")
	}
	req.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}}}`)
	second, _ := Body(req, false, false)
	if string(first) == string(second) || !strings.Contains(string(second), `"parameters":{"properties":{"file":{"type":"string"}},"type":"object"}`) {
		t.Fatalf("after a change:\n%s", second)
	}
	for i := range maxSchemas + 10 {
		if _, err := schemaJSON(json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(schemas.m); n > maxSchemas || n == 0 {
		t.Fatalf("%d schemas kept, at most %d", n, maxSchemas)
	}
}

// Every body the wire builds on what it kept of a conversation's earlier
// bodies is Body's, byte for byte — through prompts after unanswered
// results, empty answers, records, cleared results, a summary and a
// second conversation — and most are built on kept bytes.
func TestKeptBodiesAreBodysBytes(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		for _, givenBack := range []bool{false, true} { // each body given back once answered, as Complete does
			var kept prefix.Cache
			k := providertest.KeptBodies{
				Base:   sampleRequest(),
				Kept:   func(req provider.Request) ([]byte, error) { return bodyWith(req, legacy, true, &kept) },
				Whole:  func(req provider.Request) ([]byte, error) { return Body(req, legacy, true) },
				Reuses: func(req provider.Request) bool { return kept.Get(req.CacheKey, req.System, req.Messages) != nil },
			}
			if givenBack {
				k.Answered = func(req provider.Request, body []byte) { kept.Release(req.CacheKey, body) }
			}
			providertest.CheckKeptBodies(t, k)
		}
	}
}

// Over loopback, a conversation's next body is written into the memory
// of the answered one before it, and every body is Body's.
func TestCompleteWritesTheNextBodyIntoTheAnsweredOnesMemory(t *testing.T) {
	srv := providertest.NewOpenAI(t)
	p := newProvider(t, srv, false)
	providertest.CheckBodiesInPlace(t, srv, p, sampleRequest(), func(req provider.Request) ([]byte, error) {
		return Body(req, p.legacy, true)
	})
}

// A conversation whose system prompt changed is encoded whole: the kept
// bytes hold the old one.
func TestAChangedSystemPromptIsNotSentAsTheKeptOne(t *testing.T) {
	var kept prefix.Cache
	req := sampleRequest()
	req.CacheKey = "k"
	if _, err := bodyWith(req, false, true, &kept); err != nil {
		t.Fatal(err)
	}
	req.System = "You are verbose."
	got, _ := bodyWith(req, false, true, &kept)
	want, _ := Body(req, false, true)
	if !bytes.Equal(got, want) {
		t.Fatalf("after the system prompt changed, sent\n%s\nwant\n%s", got, want)
	}
}
