package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
)

// A restarted process reads a long conversation back (its decoders, many
// messages to a buffer: history.Decoder) to the request the running
// process sends, byte for byte, on every wire: texts with escapes and
// characters beyond ASCII, calls' inputs, error results, images, results
// with the permission record and the files they changed — the running
// process having decoded each message as it was appended, one at a time
// (history.DecodeMessage).
func TestARestartReadsALongConversationBackToTheSameRequestBytes(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			r.write("a.txt", "alpha\n")
			r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("toolu_first", "a.txt")}}, providertest.Step{Text: "read"})
			r.turn("turn one")
			appendLongConversation(t, r)
			send := r.sent
			running := send(r.agent)
			restarted := send(r.newAgent())
			if running != restarted {
				i := 0
				for i < min(len(running), len(restarted)) && running[i] == restarted[i] {
					i++
				}
				t.Fatalf("the request after a restart differs from the running process's at byte %d of %d/%d:\nrunning   %q\nrestarted %q",
					i, len(running), len(restarted), running[max(0, i-80):min(len(running), i+80)], restarted[max(0, i-80):min(len(restarted), i+80)])
			}
			if !strings.Contains(running, "done 699") {
				t.Fatal("the request does not hold the conversation's last message")
			}
		})
	}
}

// appendLongConversation appends to r's conversation 700 rounds of a
// prompt, an answer calling a tool, its result and a last answer: texts
// with escapes and characters beyond ASCII, calls' inputs, error results,
// images, results with the permission record and the files they changed.
func appendLongConversation(t *testing.T, r *rig) {
	t.Helper()
	ctx := context.Background()
	var batch []history.Message
	for i := range 700 { // enough rows for the decoders and several buffers
		call := fmt.Sprintf("toolu_%d", i)
		res := history.Part{Type: history.ToolResultPart, CallID: call,
			Text: fmt.Sprintf("     1\tline \"%d\" \\ é 漢字 \U0001F600\n%s", i, strings.Repeat("x", i%97)), IsError: i%5 == 0}
		switch i % 7 {
		case 1:
			res.Images = []result.Image{{MIMEType: "image/png", Data: []byte(fmt.Sprintf("png %d", i))}}
		case 2:
			res.Permission = &permission.Record{Decision: "allow", By: "rule"}
		case 3:
			res.Files = []history.FileChange{{Path: fmt.Sprintf("f%d.txt", i), Created: true}}
		}
		batch = append(batch,
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("go on\t%d ü", i)}}},
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read\nthe next file."},
				{Type: history.ToolCallPart, CallID: call, Name: "workspace--read", Input: json.RawMessage(fmt.Sprintf(`{"path":"src/%d.go","note":"\u00e9\n"}`, i))}}},
			history.Message{Role: history.User, Parts: []history.Part{res}},
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("done %d", i)}}})
		if len(batch) >= 400 {
			if err := r.agent.Store.Append(ctx, r.id, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := r.agent.Store.Append(ctx, r.id, batch...); err != nil {
		t.Fatal(err)
	}
}
