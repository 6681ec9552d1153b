package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// An answer cut mid-stream (the connection dropped) is stored as far as it
// streamed, marked as cut; a tool call that had not finished streaming is
// neither stored nor run; and the next request, on either wire, carries
// what the user saw in an assistant message of its own.
func TestAnAnswerCutMidStreamIsStoredAsFarAsItWent(t *testing.T) {
	write := providertest.ToolCall{ID: "w1", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}
	for _, tc := range []struct {
		name, wire string
		cutAfter   int // events of the step's stream sent
		want       string
	}{
		{"anthropic, mid-text", "anthropic", 3, "Hello the"},
		{"anthropic, mid-tool-call", "anthropic", 7, "Hello there, world."},
		{"openai, mid-tool-call", "openai", 4, "Hello there, world."},
		{"anthropic, before any text", "anthropic", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWireRig(t, tc.wire)
			r.srv.Push(providertest.Step{Text: "Hello there, world.", ToolCalls: []providertest.ToolCall{write}, CutAfter: tc.cutAfter},
				providertest.Step{Text: "again"})
			var shown strings.Builder
			_, err := r.agent.Turn(context.Background(), r.id, "hi", func(e Event) {
				if e.Kind == TextDelta {
					shown.WriteString(e.Text)
				}
			})
			if err == nil {
				t.Fatal("a cut stream gave no error")
			}
			if shown.String() != tc.want {
				t.Fatalf("streamed %q, want %q", shown.String(), tc.want)
			}
			msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
			if len(msgs) != 2 {
				t.Fatalf("%d messages stored, want the prompt and the cut answer: %+v", len(msgs), msgs)
			}
			must(t, fmt.Sprintf("stored %+v", msgs),
				want{msgs[1].Cut, "the answer marked cut"},
				want{msgs[1].Role == history.Assistant, "the answer the assistant's"},
				want{len(msgs[1].ToolCalls()) == 0, "no tool calls in the cut answer"})
			wantStored := tc.want + "\n\n" + CutMarker
			if tc.want == "" {
				wantStored = NoTextMarker
			}
			if got := textOf(msgs[1]); got != wantStored {
				t.Fatalf("stored text %q", got)
			}
			if _, err := os.Stat(filepath.Join(r.dir, "w.txt")); err == nil {
				t.Fatal("the cut tool call was run")
			}
			r.turn("go on")
			sent := r.srv.Request(1)["messages"].([]any)
			if sent[0].(map[string]any)["role"] == "system" { // openai
				sent = sent[1:]
			}
			if len(sent) != 3 {
				t.Fatalf("the next request has %d messages: %v", len(sent), sent)
			}
			answer := sent[1].(map[string]any)
			var text strings.Builder
			switch content := answer["content"].(type) {
			case string: // openai
				text.WriteString(content)
			case []any: // anthropic: text blocks
				for _, b := range content {
					if b.(map[string]any)["type"] != "text" {
						t.Fatalf("block %v", b)
					}
					text.WriteString(b.(map[string]any)["text"].(string))
				}
			}
			must(t, fmt.Sprintf("the cut answer as sent: %v", answer),
				want{answer["role"] == "assistant", "the assistant's"},
				want{text.String() == wantStored, fmt.Sprintf("its text %q", wantStored)},
				want{answer["tool_calls"] == nil, "no tool calls"})
		})
	}
}

// A turn handed over (its context cancelled with ErrHandedOver: the
// process running it stops, and another is to continue it) stores no cut
// answer mid-stream, unlike a cancel: the turn has not ended, and
// Continue sends the request again and ends it with the whole answer.
func TestATurnHandedOverMidStreamStoresNoCutAnswerAndContinueFinishesIt(t *testing.T) {
	r := newWireRig(t, "anthropic")
	hold := make(chan struct{})
	defer close(hold)
	r.srv.Push(providertest.Step{Text: "never finished", Hold: hold}, providertest.Step{Text: "the whole answer"})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.agent.Turn(ctx, r.id, "hi", nil)
		done <- err
	}()
	for len(r.srv.Requests()) == 0 {
		runtime.Gosched()
	}
	cancel(ErrHandedOver)
	if err := <-done; err == nil {
		t.Fatal("a turn handed over returned no error")
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if len(msgs) != 1 || msgs[0].Role != history.User {
		t.Fatalf("a turn handed over stored %+v; want its prompt alone (no cut answer: the turn goes on elsewhere)", msgs)
	}
	tr, err := r.agent.Continue(context.Background(), r.id, nil)
	if err != nil || tr.Text != "the whole answer" {
		t.Fatalf("Continue after the hand-over: %+v, %v; want the whole answer", tr, err)
	}
	msgs, _ = r.agent.Store.Messages(context.Background(), r.id)
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored, want the prompt and the whole answer: %+v", len(msgs), msgs)
	}
	must(t, fmt.Sprintf("stored %+v", msgs),
		want{!msgs[1].Cut, "the answer not cut"},
		want{textOf(msgs[1]) == "the whole answer", "the whole answer"})
}
