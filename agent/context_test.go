package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// emitText is what the emit tool returns for call n: chars characters of
// numbered lines, different for every n.
func emitText(n, chars int) string {
	var b strings.Builder
	for i := 0; b.Len() < chars; i++ {
		fmt.Fprintf(&b, "result %d line %d: %s\n", n, i, strings.Repeat("abcdefghij", 5))
	}
	return b.String()[:chars]
}

// emitTool returns emitText(n, chars) for {"n": n, "chars": chars}.
func emitTool(t testing.TB) *tool.Tool {
	t.Helper()
	type in struct {
		N     int `json:"n"`
		Chars int `json:"chars"`
	}
	et, err := tool.Func("emit", "Emits a numbered text.", func(ctx context.Context, a in) (any, error) {
		return emitText(a.N, a.Chars), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return et
}

func emitCall(n, chars int) providertest.Step {
	return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":%d}`, n, chars)}}}
}

// records are the Context records of conversation id.
func records(t *testing.T, a *Agent, id string) []history.Edit {
	t.Helper()
	msgs, err := a.Store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var edits []history.Edit
	for _, m := range msgs {
		if m.Role == history.Context {
			edits = append(edits, *m.Edit)
		}
	}
	return edits
}

func TestEveryClearedResultIsReadBackWholeWithTheCallInItsPlaceholder(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	sizes := map[int]int{}
	for n := range 12 {
		sizes[n] = 4000
		if n == 2 {
			sizes[n] = 30000 // over the inline cap: spilled, and cleared as its spill file
		}
		r.srv.Push(emitCall(n, sizes[n]))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	_, events := r.turn("emit them")

	edits := records(t, r.agent, r.id)
	if len(edits) == 0 {
		t.Fatal("12 rounds of 4,000 characters in a 12,000-token window cleared nothing")
	}
	seen := 0
	for _, e := range edits {
		for _, c := range e.Cleared {
			seen++
			var n int
			fmt.Sscanf(c.CallID, "call_%d", &n)
			i := strings.Index(c.Text, "workspace--read ")
			if i < 0 {
				t.Fatalf("placeholder of %s has no read call: %s", c.CallID, c.Text)
			}
			var args struct{ Path string }
			if err := json.Unmarshal([]byte(strings.TrimSuffix(c.Text[i+len("workspace--read "):], "]")), &args); err != nil || args.Path != c.Path {
				t.Fatalf("placeholder of %s: its call %q does not read %s (%v)", c.CallID, c.Text[i:], c.Path, err)
			}
			out := r.readTool(args.Path)
			if out != emitText(n, sizes[n]) {
				t.Errorf("%s read back with its placeholder's call: %d characters, not its whole result of %d", c.CallID, len(out), sizes[n])
			}
		}
	}
	if seen < 3 {
		t.Fatalf("only %d results cleared", seen)
	}
	// the requests after an edit send the placeholders, not the results
	// (one line of the first result: the whole head holds newlines, which
	// a request sends escaped)
	reqs := r.srv.Requests()
	last := string(reqs[len(reqs)-1])
	if strings.Contains(last, "result 0 line 3: ") || !strings.Contains(last, "was cleared here to save room") {
		t.Error("the last request still sends the first result, or no placeholder")
	}
	var said bool
	for _, e := range events {
		said = said || e.Kind == ContextEdit && e.Edit != nil && strings.Contains(e.Text, "out of the requests")
	}
	if !said {
		t.Error("no ContextEdit event said that results were taken out")
	}
}

// readTool reads path as the model would: the placeholder's own call
// first (by line: its first line must be the text's), then page after page
// by character, following each page's next call, and returns the text read.
func (r *rig) readTool(path string) string {
	r.t.Helper()
	d := &tool.Dispatcher{Tools: r.agent.Tools, Env: r.agent.Env}
	call := func(args string) result.Output {
		out := d.Round(context.Background(), []tool.Call{{ID: "read", Name: "workspace--read", Input: json.RawMessage(args)}})[0]
		if out.IsError {
			r.t.Fatalf("workspace--read %s: %s", args, out.Text)
		}
		return out
	}
	first, _ := json.Marshal(map[string]string{"path": path})
	if out := call(string(first)); !strings.HasPrefix(out.Text, "     1\t") {
		r.t.Fatalf("the placeholder's call reads %.80q", out.Text)
	}
	var whole strings.Builder
	next := fmt.Sprintf(`{"path":%q,"offsetChars":0}`, path)
	for next != "null" {
		out := call(next)
		page := out.Text[:strings.LastIndex(out.Text, "\n[characters ")]
		whole.WriteString(page)
		var st struct{ Next json.RawMessage }
		if err := json.Unmarshal(out.Structured, &st); err != nil {
			r.t.Fatal(err)
		}
		next = string(st.Next)
	}
	return whole.String()
}

// deadConversation stores what a conversation that outgrew its window
// before myelin kept it within one looks like: rounds of big results, an
// answer whose usage understates them (the estimate will be off), then
// turns that died on "prompt is too long".
func deadConversation(t *testing.T, r *rig, rounds int) {
	t.Helper()
	msgs := []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "emit them"}}}}
	for n := range rounds {
		id := fmt.Sprintf("call_%d", n)
		msgs = append(msgs,
			history.Message{Role: history.Assistant, Usage: &history.Usage{Input: 100 + n}, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "emit", Input: json.RawMessage(`{"n":1}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: emitText(n, 4000)}}})
	}
	for range 2 {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go on"}}}, CutAnswer(""))
	}
	if err := r.agent.Store.Append(context.Background(), r.id, msgs...); err != nil {
		t.Fatal(err)
	}
}

func TestAConversationThatDiedOfItsSizeIsContinuedAfterOneRefusal(t *testing.T) {
	for _, wire := range []string{"anthropic", "openai"} {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire, emitTool(t))
			r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
			deadConversation(t, r, 12)
			msg := "prompt is too long: 14500 tokens > 11000 maximum"
			if wire == "openai" {
				msg = "This model's maximum context length is 12000 tokens. However, your messages resulted in 14500 tokens. Please reduce the length of the messages."
			}
			r.srv.Push(providertest.Step{Status: 400, ErrorMessage: msg}, providertest.Step{Text: "back"})
			tr, events := r.turn("go on again")
			if tr.Text != "back" {
				t.Fatalf("the turn ended with %q", tr.Text)
			}
			edits := records(t, r.agent, r.id)
			if len(edits) != 1 || len(edits[0].Cleared) == 0 || !strings.Contains(edits[0].Why, "refused") || edits[0].Before != 14500 {
				t.Fatalf("edits %+v; want one, made after the refusal of 14,500 tokens", edits)
			}
			reqs := r.srv.Requests()
			if len(reqs) != 2 || len(reqs[1]) >= len(reqs[0])*2/3 {
				t.Fatalf("%d requests; the retry is %d bytes after %d", len(reqs), len(reqs[1]), len(reqs[0]))
			}
			var noticed bool
			for _, e := range events {
				noticed = noticed || e.Kind == Notice && strings.Contains(e.Text, "refused the request as longer than the context window")
			}
			if !noticed {
				t.Error("no notice said the request was refused and retried")
			}
		})
	}
}

func TestASecondRefusalFailsTheTurnSayingWhatWasTried(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	deadConversation(t, r, 12)
	refuse := providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 14500 tokens > 11000 maximum"}
	r.srv.Push(refuse, refuse)
	_, err := r.agent.Turn(context.Background(), r.id, "again", nil)
	if err == nil || !strings.Contains(err.Error(), "refused the request as too long twice") || !strings.Contains(err.Error(), "tool result(s)") {
		t.Fatalf("err = %v; want it to say it was refused twice and what was taken out between", err)
	}
	if n := len(r.srv.Requests()); n != 2 {
		t.Fatalf("%d requests; want the request and one retry", n)
	}
}

func TestAResumeWithOtherSettingsSaysTheCachedPrefixWillNotBeReused(t *testing.T) {
	r := newRig(t)
	r.srv.Push(providertest.Step{Text: "one"}, providertest.Step{Text: "two"}, providertest.Step{Text: "three"})
	_, events := r.turn("first")
	for _, e := range events {
		if e.Kind == Notice {
			t.Fatalf("a new conversation got a notice: %s", e.Text)
		}
	}
	// the same settings after a restart: nothing to say, nothing stored again
	r.agent = r.newAgent()
	_, events = r.turn("second")
	for _, e := range events {
		if e.Kind == Notice {
			t.Fatalf("a resume with the same settings got a notice: %s", e.Text)
		}
	}
	// another model and another tool set
	r.agent = r.newAgent(emitTool(t))
	r.agent.Model = "claude-other"
	_, events = r.turn("third")
	var said string
	for _, e := range events {
		if e.Kind == Notice {
			said = e.Text
		}
	}
	if !strings.Contains(said, "cached prefix of this conversation will not be reused") || !strings.Contains(said, "the model was claude-test and is now claude-other") || !strings.Contains(said, "the tool set changed") {
		t.Fatalf("notice %q; want it to say the cache will not be reused, and why", said)
	}
	msgs, err := r.agent.Store.Messages(context.Background(), r.id)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, m := range msgs {
		if m.Settings != nil {
			stored = append(stored, fmt.Sprintf("%s on a %s message", m.Settings.Model, m.Role))
		}
	}
	if want := "[claude-test on a assistant message claude-other on a assistant message]"; fmt.Sprint(stored) != want {
		t.Fatalf("settings stored: %v; want %s", stored, want)
	}
	if msgs[1].Settings == nil || msgs[1].Settings.Cache == "" || len(msgs[1].Settings.Tools) != 64 {
		t.Fatalf("the first answer's settings %+v: want the cache settings and the tools' SHA-256", msgs[1].Settings)
	}
}

func TestALongToolCallInputIsClearedAndItsFileHoldsItWhole(t *testing.T) {
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	content := emitText(99, 6000)
	input, _ := json.Marshal(map[string]string{"path": "notes.txt", "content": content})
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "write_1", Name: "workspace--write", Input: string(input)}}})
	for n := range 10 {
		r.srv.Push(emitCall(n, 4000))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	r.turn("write, then emit")
	var got *history.Cleared
	for _, e := range records(t, r.agent, r.id) {
		for _, c := range e.Cleared {
			if c.CallID == "write_1" && c.Input {
				got = &c
			}
		}
	}
	if got == nil {
		t.Fatal("the 6,000-character input of the first call was not cleared")
	}
	var placeholder map[string]string
	if err := json.Unmarshal([]byte(got.Text), &placeholder); err != nil || !strings.Contains(placeholder["myelin_cleared"], `workspace--read {"path":"`+got.Path+`"}`) {
		t.Fatalf("the input sent in its place is %s (%v); want an object naming its file and the read call", got.Text, err)
	}
	if whole := r.readTool(got.Path); whole != string(input) {
		t.Fatalf("the input's file reads back %d characters; want the %d of the input", len(whole), len(input))
	}
	reqs := r.srv.Requests()
	if last := reqs[len(reqs)-1]; bytes.Contains(last, []byte(content[:300])) {
		t.Error("the last request still sends the long input")
	}
}

func TestErrorsAndImagesAreClearedLikeAnyResultAndKeptInFiles(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n-a-picture-of-some-bytes")
	shot, err := tool.Func("shot", "Returns a picture, or fails.", func(ctx context.Context, a struct {
		Fail bool `json:"fail,omitempty"`
	}) (any, error) {
		if a.Fail {
			return nil, fmt.Errorf("the camera failed: %s", strings.Repeat("e", 3000))
		}
		return result.Result{Data: []result.Block{result.TextBlock{Text: strings.Repeat("caption ", 300)}, result.ImageBlock{MIMEType: "image/png", Data: png}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, emitTool(t), shot)
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "img_1", Name: "shot", Input: `{}`}, {ID: "err_1", Name: "shot", Input: `{"fail":true}`}}})
	for n := range 10 {
		r.srv.Push(emitCall(n, 4000))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	r.turn("shoot, then emit")
	byID := map[string]history.Cleared{}
	for _, e := range records(t, r.agent, r.id) {
		for _, c := range e.Cleared {
			byID[c.CallID] = c
		}
	}
	img, ok := byID["img_1"]
	if !ok || img.Images != 1 || !strings.Contains(img.Text, "its images in .myelin/tool-results/cleared-img_1-1.png") {
		t.Fatalf("the image result was not cleared with its image kept: %+v", img)
	}
	if got, err := os.ReadFile(filepath.Join(r.dir, ".myelin/tool-results/cleared-img_1-1.png")); err != nil || !bytes.Equal(got, png) {
		t.Fatalf("the image's file holds %q, %v", got, err)
	}
	if e, ok := byID["err_1"]; !ok || !strings.HasPrefix(e.Text, "[myelin: an error result") || !strings.HasPrefix(r.readTool(e.Path), "the camera failed") {
		t.Fatalf("the error result was not cleared and kept: %+v", e)
	}
	// the requests after the edit send neither the image nor the error's text
	reqs := r.srv.Requests()
	last := reqs[len(reqs)-1]
	if bytes.Contains(last, []byte(`"type":"image"`)) || bytes.Contains(last, []byte("the camera failed")) {
		t.Fatal("the last request still sends the cleared image or error")
	}
}

func TestASummaryCutByItsBoundIsRefusedInEveryWiresWords(t *testing.T) {
	for stop, cut := range map[string]bool{"max_tokens": true, "length": true, "max_output_tokens": true, "end_turn": false, "stop": false, "tool_calls": false} {
		if got := cutByItsBound(stop); got != cut {
			t.Errorf("cutByItsBound(%q) = %v; want %v", stop, got, cut)
		}
	}
}

func TestAFirstRequestEstimatedOverTheWindowIsSentWithANotice(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	r.srv.Push(providertest.Step{Text: "read it all"})
	tr, events := r.turn(strings.Repeat("a pasted document ", 2800)) // about 14,400 tokens at 3.5 bytes a token
	if tr.Text != "read it all" {
		t.Fatalf("the turn ended with %q; want the request sent and answered", tr.Text)
	}
	var said bool
	for _, e := range events {
		said = said || e.Kind == Notice && strings.Contains(e.Text, "sending it: the provider will say")
	}
	if !said {
		t.Error("no notice said the request was estimated over the window and sent all the same")
	}
}
