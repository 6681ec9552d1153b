package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// testWire is how the agent's tests reach one wire: its scripted fake
// server, its provider pointed at that server, and how to read the tool
// results a request carried. Each wire registers itself in testWires from
// its own file (wire_<name>_test.go), so that adding a wire touches no
// shared test.
type testWire struct {
	server   func(t testing.TB, steps ...providertest.Step) *providertest.Server
	provider func(url string) (provider.Provider, error)
	// results are the tool results of the request body req, decoded.
	results func(req map[string]any) []sentResult
	// model is the model name requests name on it.
	model string
	// messages and system name the request members that hold the
	// conversation and the system prompt: "messages" and "system" when
	// empty (the Responses API's are "input" and "instructions").
	messages, system string
	// objectInput is set when the wire's calls carry their arguments as
	// a JSON object, never as text, so that input that is not JSON cannot
	// reach the agent on it.
	objectInput bool
	// sign, when set, is what any client of the wire must do to each
	// request besides sending it: the overhead benchmark's raw floor does
	// it before each request it replays (Bedrock: SigV4).
	sign func(r *http.Request, body []byte) error
}

// members are the names of wire's request members that hold the
// conversation and the system prompt.
func members(wire string) (messages, system string) {
	w := testWires[wire]
	messages, system = w.messages, w.system
	if messages == "" {
		messages = "messages"
	}
	if system == "" {
		system = "system"
	}
	return messages, system
}

var testWires = map[string]testWire{}

// wires are the names of the wires the tests run on, sorted.
func wires() []string {
	names := make([]string, 0, len(testWires))
	for n := range testWires {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sentResult is a tool result as request i carried it, on any wire.
type sentResult struct {
	callID  string
	text    string
	isError bool
	images  []string // data of native images sent for it
}

func (r *rig) sentResults(i int) []sentResult {
	return testWires[r.wire].results(r.srv.Request(i))
}

func TestOnEveryWire(t *testing.T) {
	for _, wire := range wires() {
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
				messages, system := members(wire)
				fm := providertest.StripCacheMarks(first[messages]).([]any)
				sm := providertest.StripCacheMarks(second[messages]).([]any)
				a, _ := json.Marshal(fm)
				b, _ := json.Marshal(sm[:len(fm)])
				if string(a) != string(b) {
					t.Fatalf("earlier messages changed:\n%s\n%s", a, b)
				}
				for _, k := range []string{system, "tools", "model"} {
					x, _ := json.Marshal(providertest.StripCacheMarks(first[k]))
					y, _ := json.Marshal(providertest.StripCacheMarks(second[k]))
					if string(x) != string(y) {
						t.Fatalf("%s changed after the restart", k)
					}
				}
			})
			t.Run("arguments that are not JSON get an error result naming the problem", func(t *testing.T) {
				if testWires[wire].objectInput {
					t.Skip("the wire's arguments are always a JSON object")
				}
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
