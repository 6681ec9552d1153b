package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// waitsForKeep is a tool that returns once call id's result is kept (kept
// receives the ids a keepSignal store has kept), having read the kept
// results into seen as another process would.
func waitsForKeep(name, id string, kept <-chan string, r **rig, seen *[]history.Part) *tool.Tool {
	return tool.MustFunc(name, "Waits for another call's keep.", func(ctx context.Context, in struct{}) (any, error) {
		for k := range kept {
			if k == id {
				break
			}
		}
		var err error
		*seen, err = (*r).newAgent().Store.Kept(context.Background(), (*r).id)
		return name + " done", err
	})
}

// counting is a tool that counts its runs and answers with the count.
func counting(name string, rerun bool, runs *atomic.Int32) *tool.Tool {
	t := tool.MustFunc(name, "Counts its runs.", func(ctx context.Context, in struct {
		Key string `json:"key"`
	}) (any, error) {
		return fmt.Sprintf("%s run %d for %s", name, runs.Add(1), in.Key), nil
	})
	t.Rerun = rerun
	return t
}

// crashedRound stores what a process killed mid-round leaves: the prompt,
// the answer asking for calls, and the kept results of the calls that had
// finished.
func crashedRound(t *testing.T, store history.Store, id string, calls []history.Part, kept ...history.Part) {
	t.Helper()
	ctx := context.Background()
	err := store.Append(ctx, id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		history.Message{Role: history.Assistant, Parts: calls})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) > 0 {
		if err := store.Keep(ctx, id, kept...); err != nil {
			t.Fatal(err)
		}
	}
}

func callPart(id, name, input string) history.Part {
	return history.Part{Type: history.ToolCallPart, CallID: id, Name: name, Input: json.RawMessage(input)}
}

// answeredOnce fails unless every tool call of the stored conversation is
// answered exactly once, by the next message that is not a record, and
// nothing answers a call it does not follow.
func answeredOnce(t *testing.T, store history.Store, id string) {
	t.Helper()
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var open map[string]int // calls of the last answer, by id: times answered
	for i, m := range msgs {
		if m.Role == history.Context {
			continue
		}
		for _, p := range m.Parts {
			if p.Type != history.ToolResultPart {
				continue
			}
			if _, ok := open[p.CallID]; !ok {
				t.Fatalf("message %d answers call %s, which the message before it did not make", i, p.CallID)
			}
			open[p.CallID]++
		}
		for c, n := range open {
			if n != 1 {
				t.Fatalf("call %s is answered %d times by message %d; want once", c, n, i)
			}
		}
		open = map[string]int{}
		for _, c := range m.ToolCalls() {
			open[c.CallID] = 0
		}
		if m.Role != history.Assistant && len(open) > 0 {
			t.Fatalf("message %d, of role %s, makes calls", i, m.Role)
		}
	}
	if len(open) > 0 {
		t.Fatalf("the conversation ends with calls unanswered: %v", open)
	}
	if kept, err := store.Kept(context.Background(), id); err != nil || len(kept) != 0 {
		t.Fatalf("kept results left after the recovery: %+v, %v", kept, err)
	}
}

// A round of three calls stopped mid-way — one finished (its result kept),
// one to a tool that may run again, one to a tool that may not — recovers
// to the kept result, a fresh result from running the tool once, and
// Interrupted; the conversation is valid, and the turn goes on with them.
func TestRecoveryRunsAgainOnlyTheUnfinishedCallsWhoseToolsMayRunAgain(t *testing.T) {
	var looks, acts atomic.Int32
	look, act := counting("count--look", true, &looks), counting("count--act", false, &acts)
	r := newRig(t, look, act)
	crashedRound(t, r.agent.Store, r.id, []history.Part{
		callPart("done", "count--look", `{"key":"a"}`),
		callPart("again", "count--look", `{"key":"b"}`),
		callPart("not", "count--act", `{"key":"c"}`),
	}, history.Part{Type: history.ToolResultPart, CallID: "done", Text: "count--look run 1 for a (before the crash)"})
	r.agent = r.newAgent(look, act)
	r.srv.Push(providertest.Step{Text: "ok"})
	_, events := r.turn("back")
	if n := looks.Load(); n != 1 {
		t.Fatalf("count--look ran %d times on recovery; want once (the unfinished call only)", n)
	}
	if n := acts.Load(); n != 0 {
		t.Fatalf("count--act, which may not run again, ran %d times", n)
	}
	res := r.toolResults(0)
	want := []struct {
		id, text string
		isError  bool
	}{
		{"done", "count--look run 1 for a (before the crash)", false},
		{"again", "count--look run 1 for b", false},
		{"not", Interrupted, true},
	}
	if len(res) != len(want) {
		t.Fatalf("results sent: %v", res)
	}
	for i, w := range want {
		if res[i]["tool_use_id"] != w.id || res[i]["content"] != w.text || (res[i]["is_error"] == true) != w.isError {
			t.Errorf("result %d: %v; want %s %q (error %v)", i, res[i], w.id, w.text, w.isError)
		}
	}
	answeredOnce(t, r.agent.Store, r.id)
	const notice = "the last process stopped during a round: 1 tool call(s) had finished and keep their own results; ran 1 tool call(s) again"
	if events[1].Kind != Notice || !strings.HasPrefix(events[1].Text, notice) || !strings.Contains(events[1].Text, "answered 1 tool call(s) interrupted") {
		t.Fatalf("the turn's notice: %+v", events[1])
	}
}

// A turn whose recovery only ran calls again says so, as it says any
// other recovery.
func TestATurnSaysItRanCallsAgainWhenThatIsAllItsRecoveryDid(t *testing.T) {
	var looks atomic.Int32
	look := counting("count--look", true, &looks)
	r := newRig(t, look)
	crashedRound(t, r.agent.Store, r.id, []history.Part{callPart("again", "count--look", `{"key":"b"}`)})
	r.srv.Push(providertest.Step{Text: "ok"})
	_, events := r.turn("back")
	if looks.Load() != 1 || events[1].Kind != Notice || !strings.Contains(events[1].Text, "ran 1 tool call(s) again") {
		t.Fatalf("ran %d times; events %+v", looks.Load(), events[:2])
	}
}

// A re-run goes through the dispatcher like any call: its text is what the
// first run would have given (here a page fitted to the cap, with the
// footer naming the next).
func TestARerunCallsTextIsWhatAFirstRunGives(t *testing.T) {
	r := newRig(t)
	r.write("big.txt", strings.Repeat("a line of the big file\n", 5000))
	calls := []history.Part{callPart("toolu_big", "workspace--read", `{"path":"big.txt","limit":100000}`)}
	first := (&tool.Dispatcher{Tools: r.agent.Tools, Env: r.agent.Env}).Call(context.Background(),
		tool.Call{ID: "toolu_big", Name: "workspace--read", Input: calls[0].Input})
	crashedRound(t, r.agent.Store, r.id, calls)
	rec, err := r.newAgent().Recover(context.Background(), r.id)
	if err != nil || rec != (Recovery{Rerun: 1}) {
		t.Fatalf("Recover = %+v, %v; want one call run again", rec, err)
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	got := msgs[len(msgs)-1].Parts[0]
	if got.Text != first.Text || got.IsError || got.SpillPath != first.SpillPath || !strings.Contains(got.Text, "offset") {
		t.Fatalf("re-run result %.200q (spill %q); a first run gives %.200q (spill %q)", got.Text, got.SpillPath, first.Text, first.SpillPath)
	}
	answeredOnce(t, r.agent.Store, r.id)
}

// A call whose tool may run again but is gone, or whose input its schema
// no longer takes, is answered as interrupted, saying why, and not run.
func TestARerunThatCannotRunIsAnsweredInterruptedWithWhy(t *testing.T) {
	var looks atomic.Int32
	look := counting("count--look", true, &looks)
	r := newRig(t, look)
	crashedRound(t, r.agent.Store, r.id, []history.Part{
		callPart("gone", "old--tool", `{}`),
		callPart("bad", "count--look", `{"key":5}`),
		{Type: history.ToolCallPart, CallID: "notjson", Name: "count--look", Text: `{"key":`},
	})
	rec, err := r.agent.Recover(context.Background(), r.id)
	if err != nil || rec != (Recovery{Interrupted: 3}) {
		t.Fatalf("Recover = %+v, %v; want three interrupted", rec, err)
	}
	if n := looks.Load(); n != 0 {
		t.Fatalf("count--look ran %d times", n)
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	parts := msgs[len(msgs)-1].Parts
	for i, want := range []string{
		`: there is no tool named "old--tool" now`,
		`: its input does not pass count--look's input schema now: `,
		`: its input does not pass count--look's input schema now: the input is not valid JSON`,
	} {
		if !parts[i].IsError || !strings.HasPrefix(parts[i].Text, Interrupted+want) {
			t.Errorf("answer to %s: %q; want it to start %q", parts[i].CallID, parts[i].Text, Interrupted+want)
		}
	}
	answeredOnce(t, r.agent.Store, r.id)
}

// A re-run keeps each result as it finishes, as any round does: a process
// stopped again while another re-run call still runs leaves that result
// for the next recovery.
func TestARerunKeepsEachResultAsItFinishes(t *testing.T) {
	var looks atomic.Int32
	var r *rig
	var seen []history.Part
	kept := make(chan string, 4)
	wait := waitsForKeep("wait--kept", "fast", kept, &r, &seen)
	wait.Rerun = true
	look := counting("count--look", true, &looks)
	r = newRig(t, look, wait)
	crashedRound(t, r.agent.Store, r.id, []history.Part{
		callPart("fast", "count--look", `{"key":"a"}`),
		callPart("slow", "wait--kept", `{}`),
	})
	r.agent.Store = keepSignal{r.agent.Store, kept}
	if rec, err := r.agent.Recover(context.Background(), r.id); err != nil || rec != (Recovery{Rerun: 2}) {
		t.Fatalf("Recover = %+v, %v", rec, err)
	}
	if len(seen) != 1 || seen[0].CallID != "fast" || seen[0].Text != "count--look run 1 for a" {
		t.Fatalf("kept while the other re-run ran: %+v; want fast's result", seen)
	}
	answeredOnce(t, r.agent.Store, r.id)
}

func TestRecoveryStringSaysWhatWasDone(t *testing.T) {
	tests := []struct {
		rec  Recovery
		want string
	}{
		{Recovery{Interrupted: 2}, "answered 2 tool call(s) interrupted when the last process stopped; they were not run again"},
		{Recovery{Finished: 1, Interrupted: 1}, "the last process stopped during a round: 1 tool call(s) had finished and keep their own results; answered 1 tool call(s) interrupted when the last process stopped; they were not run again"},
		{Recovery{Rerun: 3}, "the last process stopped during a round: ran 3 tool call(s) again, whose tools may run again (a second run has no effect beyond its result)"},
		{Recovery{Finished: 1, Rerun: 1, Interrupted: 1}, "the last process stopped during a round: 1 tool call(s) had finished and keep their own results; ran 1 tool call(s) again, whose tools may run again (a second run has no effect beyond its result); answered 1 tool call(s) interrupted when the last process stopped; they were not run again"},
	}
	for _, tt := range tests {
		if got := tt.rec.String(); got != tt.want {
			t.Errorf("%+v: %q\nwant %q", tt.rec, got, tt.want)
		}
	}
}
