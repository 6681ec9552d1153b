package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// On Gemini, inside one turn, the window clears an old call's input: the
// call goes out without the thought signature it came with, and the API
// (as the fake) refuses the rest of the loop.
func TestOnGeminiAClearedInputKeepsItsSignature(t *testing.T) {
	r := newWireRig(t, "gemini", emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	input, _ := json.Marshal(map[string]string{"path": "notes.txt", "content": emitText(99, 6000)})
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "write_1", Name: "workspace--write", Input: string(input)}}})
	for n := range 10 {
		r.srv.Push(emitCall(n, 4000))
	}
	r.srv.Push(providertest.Step{Text: "done"})
	tr, err := r.agent.Turn(context.Background(), r.id, "write, then emit", func(Event) {})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if tr.Text != "done" {
		t.Fatalf("turn ended with %q (reason %q); want done", tr.Text, tr.Reason)
	}
}
