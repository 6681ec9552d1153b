package window

import (
	"encoding/json"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A Gemini call whose input the window takes out keeps its thought
// signature: Gemini 3 refuses a call of the current turn without it.
func TestAClearedInputKeepsItsWiresSignature(t *testing.T) {
	stored := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "workspace--write",
			Input: json.RawMessage(`{"content":"long"}`), Wire: "gemini", Signature: "c2lnbmF0dXJl"}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "ok"}}},
		{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{{Msg: 1, CallID: "c1", Input: true, Text: `{"cleared":true}`}}}},
	}
	got := View(stored)
	p := got[1].Parts[0]
	if string(p.Input) != `{"cleared":true}` {
		t.Fatalf("input not cleared: %s", p.Input)
	}
	if p.Wire != "gemini" || p.Signature != "c2lnbmF0dXJl" {
		t.Errorf("the cleared call lost its signature: Wire %q Signature %q", p.Wire, p.Signature)
	}
}
