package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

var wires = []string{"anthropic", "openai"}

// sentResult is a tool result as request i carried it, on either wire.
type sentResult struct {
	callID  string
	text    string
	isError bool
	images  []string // data of native images sent for it
}

func (r *rig) sentResults(i int) []sentResult {
	req := r.srv.Request(i)
	msgs := req["messages"].([]any)
	var out []sentResult
	if r.wire == "anthropic" {
		for _, b := range msgs[len(msgs)-1].(map[string]any)["content"].([]any) {
			m := b.(map[string]any)
			if m["type"] != "tool_result" {
				continue
			}
			sr := sentResult{callID: m["tool_use_id"].(string), isError: m["is_error"] == true}
			switch c := m["content"].(type) {
			case string:
				sr.text = c
			case []any:
				for _, x := range c {
					blk := x.(map[string]any)
					if blk["type"] == "text" {
						sr.text = blk["text"].(string)
					} else if blk["type"] == "image" {
						sr.images = append(sr.images, blk["source"].(map[string]any)["data"].(string))
					}
				}
			}
			out = append(out, sr)
		}
		return out
	}
	// openai: the tool messages after the last assistant message, then the
	// user message holding their images
	last := 0
	for j, m := range msgs {
		if m.(map[string]any)["role"] == "assistant" {
			last = j
		}
	}
	for _, x := range msgs[last+1:] {
		m := x.(map[string]any)
		switch m["role"] {
		case "tool":
			out = append(out, sentResult{callID: m["tool_call_id"].(string), text: m["content"].(string)})
		case "user":
			if parts, ok := m["content"].([]any); ok {
				for _, p := range parts {
					if pm := p.(map[string]any); pm["type"] == "image_url" {
						url := pm["image_url"].(map[string]any)["url"].(string)
						out[len(out)-1].images = append(out[len(out)-1].images, strings.TrimPrefix(url, "data:image/png;base64,"))
					}
				}
			}
		}
	}
	return out
}

func TestOnBothWires(t *testing.T) {
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			t.Run("a string result reaches the next request as that text", func(t *testing.T) {
				r := newWireRig(t, wire)
				r.write("a.txt", "tab\there \"quoted\" \\ <&>\nline two\n")
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}}, providertest.Step{Text: "done"})
				tr, _ := r.turn("read a.txt")
				if tr.Reason != "end_turn" || tr.Text != "done" || tr.Rounds != 1 {
					t.Fatalf("turn %+v", tr)
				}
				got := r.sentResults(1)
				want := "     1\ttab\there \"quoted\" \\ <&>\n     2\tline two\n[lines 1-2 of 2 in a.txt; end of file]"
				if len(got) != 1 || got[0].text != want || got[0].callID != "call_1" {
					t.Fatalf("sent %+v", got)
				}
				// and history holds the same bytes
				msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
				if msgs[2].Parts[0].Text != want {
					t.Fatalf("stored %q", msgs[2].Parts[0].Text)
				}
			})
			t.Run("a spilled result reaches it as head and notice", func(t *testing.T) {
				big := tool.MustFunc("big--output", "Prints a lot.", func(ctx context.Context, in struct{}) (any, error) {
					return strings.Repeat("a line of output\n", 5000), nil
				})
				r := newWireRig(t, wire, big)
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_big", Name: "big--output", Input: `{}`}}}, providertest.Step{Text: "ok"})
				r.turn("go")
				text := r.sentResults(1)[0].text
				if !strings.HasPrefix(text, "a line of output\n") || !strings.Contains(text, "Read on: workspace--read {\"path\":\".myelin/tool-results/") || len([]rune(text)) > result.DefaultCap {
					t.Fatalf("sent %d characters ending %q", len([]rune(text)), text[max(0, len(text)-200):])
				}
			})
			t.Run("an error result is its text, flagged where the wire can", func(t *testing.T) {
				r := newWireRig(t, wire)
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "missing.txt")}}, providertest.Step{Text: "no"})
				r.turn("read it")
				got := r.sentResults(1)[0]
				if got.text != "missing.txt does not exist in the workspace" || (wire == "anthropic" && !got.isError) {
					t.Fatalf("sent %+v", got)
				}
			})
			t.Run("an image is native on the wire and a placeholder in history", func(t *testing.T) {
				shot := tool.MustFunc("screen--shot", "Takes a screenshot.", func(ctx context.Context, in struct{}) (any, error) {
					return result.Result{Data: []result.Block{result.TextBlock{Text: "the screen:"}, result.ImageBlock{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}}}, nil
				})
				r := newWireRig(t, wire, shot)
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_img", Name: "screen--shot", Input: `{}`}}}, providertest.Step{Text: "seen"})
				r.turn("look")
				got := r.sentResults(1)[0]
				const text = "the screen:\n[image: image/png, 8 bytes]"
				if got.text != text || len(got.images) != 1 || got.images[0] != "iVBORw0KGgo=" {
					t.Fatalf("sent %+v", got)
				}
				msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
				if stored := msgs[2].Parts[0].Text; stored != text || strings.Contains(stored, "iVBOR") {
					t.Fatalf("history %q", stored)
				}
			})
			t.Run("after a restart the earlier messages are sent byte for byte", func(t *testing.T) {
				r := newWireRig(t, wire)
				r.write("a.txt", "alpha\n")
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}}, providertest.Step{Text: "first"})
				r.turn("turn one")
				r.agent = r.newAgent()
				r.srv.Push(providertest.Step{Text: "second"})
				r.turn("turn two")
				first, second := r.srv.Request(1), r.srv.Request(2)
				fm := providertest.StripCacheMarks(first["messages"]).([]any)
				sm := providertest.StripCacheMarks(second["messages"]).([]any)
				a, _ := json.Marshal(fm)
				b, _ := json.Marshal(sm[:len(fm)])
				if string(a) != string(b) {
					t.Fatalf("earlier messages changed:\n%s\n%s", a, b)
				}
				for _, k := range []string{"system", "tools", "model"} {
					x, _ := json.Marshal(providertest.StripCacheMarks(first[k]))
					y, _ := json.Marshal(providertest.StripCacheMarks(second[k]))
					if string(x) != string(y) {
						t.Fatalf("%s changed after the restart", k)
					}
				}
			})
			t.Run("arguments that are not JSON get an error result naming the problem", func(t *testing.T) {
				r := newWireRig(t, wire)
				r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path": "a.txt`}}}, providertest.Step{Text: "sorry"})
				r.turn("go")
				if got := r.sentResults(1)[0]; !strings.Contains(got.text, "the input is not valid JSON") {
					t.Fatalf("sent %+v", got)
				}
			})
		})
	}
}
