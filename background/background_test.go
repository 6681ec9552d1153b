package background

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

type rig struct {
	t     *testing.T
	m     *Manager
	q     *Queue
	clock *fakeClock
	root  string
	reg   *tool.Registry
}

func newRig(t *testing.T, lim Limits, root string) *rig {
	t.Helper()
	return newRigOn(t, lim, root, nil)
}

// newRigOn is newRig whose scripts run under engines (nil: the package
// script's own).
func newRigOn(t *testing.T, lim Limits, root string, engines *script.Engines) *rig {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	ws, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	if err := reg.Add(ws.Tools()...); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, q: NewQueue(), clock: newFakeClock(), root: root, reg: reg}
	env := result.Env{Store: ws, Limits: result.Limits{Agent: 1000}}
	r.m, err = New(Config{Script: script.Config{Tools: reg, Env: env, Engines: engines}, Root: root, Env: env, Limits: lim, Clock: r.clock, Waker: r.q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.m.Close)
	return r
}

// start starts code in conversation conv and returns its id.
func (r *rig) start(conv, code string) string {
	r.t.Helper()
	res := r.m.Start(tool.WithConversation(context.Background(), conv), code, 0)
	if res.IsError {
		r.t.Fatalf("start: %v", res.Data)
	}
	return strings.Fields(res.Data.(string))[3][:11]
}

// ended waits until script id has ended.
func (r *rig) ended(id string) Info {
	r.t.Helper()
	r.m.mu.Lock()
	s := r.m.byID[id]
	r.m.mu.Unlock()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("script %s did not end", id)
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return r.m.info(s)
}

// next waits for the next wake.
func (r *rig) next() Wake {
	r.t.Helper()
	failsafe := time.After(30 * time.Second)
	for {
		if w, ok := r.q.Next(); ok {
			return w
		}
		select {
		case <-r.q.Ready():
		case <-failsafe:
			r.t.Fatal("no wake came")
		}
	}
}

func (r *rig) none() {
	r.t.Helper()
	if w, ok := r.q.Next(); ok {
		r.t.Fatalf("an unexpected wake: %+v", w)
	}
}

func TestAWakeNamesTheScriptItsLineTheTimeAndWhichWakeThenThePayload(t *testing.T) {
	r := newRig(t, Limits{}, "")
	id := r.start("c1", "await sleep(120000);\nawait wake_agent({k: 'v', a: 1});")
	r.clock.waitPending(t, 2) // the lifetime and the sleep
	r.clock.Advance(2 * time.Minute)
	w := r.next()
	want := "[myelin: background script " + id + " woke you with wake_agent, from line 2 of the script, 2m0s after it started: wake 1 of at most 100. Its journal: .myelin/background/" + id + ".log. Its payload:]\n{\"a\":1,\"k\":\"v\"}"
	if w.Message != want || w.Conversation != "c1" || w.N != 1 || w.Line != 2 {
		t.Errorf("got %+v\nwant message %q", w, want)
	}
	if info := r.ended(id); info.Status != "ended" || info.Wakes != 1 {
		t.Errorf("%+v", info)
	}
	r.none()
}

func TestAPayloadOverTheCapSpillsLikeAnyResult(t *testing.T) {
	r := newRig(t, Limits{}, "")
	id := r.start("c1", "await wake_agent('line\\n'.repeat(1000))")
	w := r.next()
	if w.SpillPath == "" || !strings.Contains(w.Message, w.SpillPath) || len(w.Message) > 2000 {
		t.Fatalf("spill %q, message of %d bytes:\n%s", w.SpillPath, len(w.Message), w.Message)
	}
	b, err := os.ReadFile(filepath.Join(r.root, w.SpillPath))
	if err != nil || string(b) != strings.Repeat("line\n", 1000) {
		t.Errorf("spill file (%v): %d bytes", err, len(b))
	}
	r.ended(id)
}

func TestAnEarlyWakeIsHeldUntilTheGapNeverDropped(t *testing.T) {
	r := newRig(t, Limits{}, "")
	id := r.start("c1", "for (const p of ['one', 'two', 'three']) console.log(await wake_agent(p))")
	if w := r.next(); !strings.HasSuffix(w.Message, "\none") {
		t.Fatalf("first: %q", w.Message)
	}
	r.ended(id) // a clean end is silent; the held wakes still come
	r.none()
	r.clock.Advance(59 * time.Second)
	r.none()
	r.clock.Advance(time.Second)
	if w := r.next(); w.N != 2 || w.Held != time.Minute || !strings.HasSuffix(w.Message, "\ntwo") || !strings.Contains(w.Message, "(held 1m0s to keep wakes apart)") {
		t.Fatalf("second: %+v", w)
	}
	r.clock.Advance(time.Minute)
	if w := r.next(); w.N != 3 || w.Held != 2*time.Minute {
		t.Fatalf("third: %+v", w)
	}
	journal, _ := os.ReadFile(filepath.Join(r.root, Dir, id+".log"))
	if !strings.HasPrefix(string(journal), "wake 1 of 100: the agent is woken\nwake 2 of 100: held 1m0s, to keep wakes 1m0s apart; the agent is woken then\n") ||
		!strings.Contains(string(journal), "the script ended: it ended]") {
		t.Errorf("journal:\n%s", journal)
	}
}

func TestTheWakeAfterTheLimitIsRefusedWithAClearError(t *testing.T) {
	r := newRig(t, Limits{Wakes: 2, Gap: NoGap}, "")
	id := r.start("c1", "await wake_agent(1); await wake_agent(2); try { await wake_agent(3) } catch (e) { console.log(e.message) }")
	r.next()
	r.next()
	r.ended(id)
	r.none()
	journal, _ := os.ReadFile(filepath.Join(r.root, Dir, id+".log"))
	if !strings.Contains(string(journal), "wake_agent: this script has woken the agent 2 times, its limit of wakes; this wake was not made\n") {
		t.Errorf("journal:\n%s", journal)
	}
}

func TestAConversationRunsAtMostItsLimitOfScripts(t *testing.T) {
	r := newRig(t, Limits{Running: 2}, "")
	a := r.start("c1", "await sleep(1e9)")
	r.start("c1", "await sleep(1e9)")
	res := r.m.Start(tool.WithConversation(context.Background(), "c1"), "1", 0)
	if !res.IsError || !strings.Contains(res.Data.(string), "2 background scripts are running in this conversation, the limit") {
		t.Errorf("a third in c1: %#v", res)
	}
	r.start("c2", "await sleep(1e9)") // another conversation's count is its own
	if _, err := r.m.Cancel("c2", a); err == nil {
		t.Error("c2 cancelled c1's script")
	}
	info, err := r.m.Cancel("c1", a)
	if err != nil || info.Status != "cancelled" {
		t.Fatalf("%+v %v", info, err)
	}
	r.start("c1", "await sleep(1e9)") // room again
	r.none()                          // a cancel is silent
}

func TestAScriptThatDiesWithoutWakingWakesOnceWithItsLastOutput(t *testing.T) {
	r := newRig(t, Limits{}, "")
	id := r.start("c1", "console.log('working on it');\nnull.x")
	w := r.next()
	if !w.Died || !strings.Contains(w.Message, "background script "+id+" ended 0s after it started without waking you. Its journal: .myelin/background/"+id+".log") ||
		!strings.Contains(w.Message, "the script failed at line 2: TypeError") || !strings.HasSuffix(w.Message, "working on it\n") {
		t.Errorf("%+v", w)
	}
	if info := r.ended(id); info.Status != "failed" {
		t.Errorf("%+v", info)
	}
	r.none()
}

func TestAScriptThatWokeAndThenDiesIsSilent(t *testing.T) {
	r := newRig(t, Limits{}, "")
	id := r.start("c1", "await wake_agent('hi'); throw new Error('boom')")
	r.next()
	if info := r.ended(id); info.Status != "failed" || !strings.Contains(info.Why, "boom") {
		t.Errorf("%+v", info)
	}
	r.none()
}

func TestAScriptIsStoppedAtItsLifetime(t *testing.T) {
	r := newRig(t, Limits{Lifetime: time.Hour}, "")
	id := r.start("c1", "console.log('polling'); await sleep(1e9)")
	r.clock.waitPending(t, 2)
	r.clock.Advance(time.Hour)
	w := r.next()
	if !w.Died || !strings.Contains(w.Message, "stopped at its lifetime of 1h0m0s.\nThe end of what it printed (the whole is in its journal):\npolling\n") {
		t.Errorf("%q", w.Message)
	}
	if info := r.ended(id); info.Status != "lifetime" {
		t.Errorf("%+v", info)
	}
}

func TestAfterARestartEachConversationIsToldOnceOfItsScripts(t *testing.T) {
	root := t.TempDir()
	r := newRig(t, Limits{}, root)
	id := r.start("c1", "await sleep(1e9)")
	r.m.Close()

	again := newRig(t, Limits{}, root)
	if note, _ := again.m.Gone("c2"); note != "" {
		t.Errorf("c2 told: %q", note)
	}
	note, told := again.m.Gone("c1")
	if !strings.Contains(note, "background script "+id+", started 2026-12-03 20:00:00 UTC, was running when the myelin process that ran it stopped; it is gone and will not wake you") {
		t.Fatalf("note %q", note)
	}
	if note2, _ := again.m.Gone("c1"); note2 != note {
		t.Error("the note went before it was told")
	}
	told()
	if note, _ := again.m.Gone("c1"); note != "" {
		t.Errorf("told twice: %q", note)
	}
	third := newRig(t, Limits{}, root)
	if note, _ := third.m.Gone("c1"); note != "" {
		t.Errorf("a later process told it again: %q", note)
	}
}

func TestListAndCancelTools(t *testing.T) {
	r := newRig(t, Limits{}, "")
	if err := r.reg.Add(r.m.Tools()...); err != nil {
		t.Fatal(err)
	}
	id := r.start("c1", "await sleep(1e9)")
	d := &tool.Dispatcher{Tools: r.reg}
	ctx := tool.WithConversation(context.Background(), "c1")
	list := d.Call(ctx, tool.Call{ID: "1", Name: ToolList, Input: []byte(`{}`)})
	if list.IsError || !strings.HasPrefix(list.Text, id+" running; started 2026-12-03T20:00:00Z, lifetime 24h0m0s; woke you 0 times; journal .myelin/background/"+id+".log") {
		t.Errorf("list: %q", list.Text)
	}
	other := d.Call(tool.WithConversation(context.Background(), "c2"), tool.Call{ID: "2", Name: ToolList, Input: []byte(`{}`)})
	if other.Text != "no background scripts in this conversation" {
		t.Errorf("c2's list: %q", other.Text)
	}
	cancel := d.Call(ctx, tool.Call{ID: "3", Name: ToolCancel, Input: []byte(`{"id":"` + id + `"}`)})
	if cancel.IsError || !strings.HasPrefix(cancel.Text, "stopped background script "+id) {
		t.Errorf("cancel: %q", cancel.Text)
	}
	again := d.Call(ctx, tool.Call{ID: "4", Name: ToolCancel, Input: []byte(`{"id":"` + id + `"}`)})
	if !again.IsError || !strings.Contains(again.Text, "is not running: cancelled") {
		t.Errorf("cancel again: %q", again.Text)
	}
}

// Background scripts were bounded per conversation only: 8 conversations
// ran 25 engines (3.2 GB). Beyond the process's total, or when no engine
// is free, a script is refused at once, naming the limit; once one ends,
// the next starts.
func TestBackgroundScriptsBeyondTheProcessLimitsAreRefused(t *testing.T) {
	const waiting = "await sleep(3600000)"
	t.Run("the total of the process", func(t *testing.T) {
		r := newRig(t, Limits{Running: 3, Total: 4}, "")
		var ids []string
		for _, conv := range []string{"c1", "c1", "c2", "c3"} {
			ids = append(ids, r.start(conv, waiting))
		}
		res := r.m.Start(tool.WithConversation(context.Background(), "c4"), waiting, 0)
		if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "4 background scripts are running in this process (all conversations together), its limit (myelin's --background-scripts-total raises it)") {
			t.Fatalf("a fifth script in a fourth conversation: %q (error %v); want the process's limit named", text, res.IsError)
		}
		if n := r.m.Running(); n != 4 {
			t.Errorf("%d scripts running, want the 4 of the limit", n)
		}
		if _, err := r.m.Cancel("c2", ids[2]); err != nil {
			t.Fatal(err)
		}
		r.start("c4", waiting)
	})
	t.Run("the engines of the process", func(t *testing.T) {
		engines := script.NewEngines(3)
		r := newRigOn(t, Limits{Total: 2}, "", engines)
		// two scripts of calls hold two engines
		held := []*script.Slot{engines.TryTake(), engines.TryTake()}
		r.start("c1", waiting)
		res := r.m.Start(tool.WithConversation(context.Background(), "c2"), waiting, 0)
		if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "all 3 script engines this process may run at once are busy") || !strings.Contains(text, "--script-engines") {
			t.Fatalf("a script with no engine free: %q (error %v); want the engines' limit named", text, res.IsError)
		}
		if n := r.m.Running(); n != 1 {
			t.Errorf("%d scripts running after the refusal, want 1", n)
		}
		held[0].Free()
		r.start("c2", waiting)
		held[1].Free()
		r.m.Close()
		if n := engines.Running(); n != 0 {
			t.Errorf("%d engines taken once every script stopped; want them freed", n)
		}
	})
	t.Run("a total that leaves no engine to calls", func(t *testing.T) {
		_, err := New(Config{Script: script.Config{Engines: script.NewEngines(2)}, Root: t.TempDir(), Limits: Limits{Total: 2}, Waker: NewQueue()})
		if err == nil || !strings.Contains(err.Error(), "would leave none of the 2 script engines") {
			t.Fatalf("New with a total of 2 over 2 engines: %v; want it refused", err)
		}
	})
}

// An MCP host checks code_execution--list's and --cancel's structured
// content against their output schemas: a list with none and with a
// running script, and a cancel (with its dropped wakes), each fit.
func TestListAndCancelResultsFitTheirOutputSchemas(t *testing.T) {
	r := newRig(t, Limits{}, "")
	tools := r.m.Tools()
	if err := r.reg.Add(tools...); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tl := range tools {
		if tl.OutputSchema == nil {
			t.Fatalf("%s gives structured content and has no output schema", tl.Name)
		}
		rs, err := tl.OutputSchema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's output schema: %v", tl.Name, err)
		}
		if rs.Validate(map[string]any{}) == nil {
			t.Errorf("%s's output schema admits {}", tl.Name)
		}
		schemas[tl.Name] = rs
	}
	d := &tool.Dispatcher{Tools: r.reg}
	ctx := tool.WithConversation(context.Background(), "c1")
	fits := func(name, input string) {
		t.Helper()
		out := d.Call(ctx, tool.Call{ID: "x", Name: name, Input: []byte(input)})
		if out.IsError || out.Structured == nil {
			t.Fatalf("%s: error %v, structured %s: %s", name, out.IsError, out.Structured, out.Text)
		}
		var v any
		if err := json.Unmarshal(out.Structured, &v); err != nil {
			t.Fatal(err)
		}
		if err := schemas[name].Validate(v); err != nil {
			t.Errorf("%s's structured content %s does not fit its output schema: %v", name, out.Structured, err)
		}
	}
	fits(ToolList, `{}`)
	id := r.start("c1", "await sleep(1e9)")
	fits(ToolList, `{}`)
	fits(ToolCancel, `{"id":"`+id+`"}`)
	fits(ToolList, `{}`) // with the cancelled one: why and ended
}
