package script

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// writes records each write the engine makes to its pipe.
type writes struct {
	mu sync.Mutex
	w  [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w = append(w.w, append([]byte(nil), p...))
	return len(p), nil
}

// ops are the messages of one write, as "c c w2": an op, and an opWait's
// count of calls.
func ops(t *testing.T, b []byte) string {
	t.Helper()
	var said []string
	for r := bytes.NewReader(b); r.Len() > 0; {
		m, err := readMsg(r)
		if err != nil {
			t.Fatalf("a write the engine made does not hold whole messages: %v", err)
		}
		s := string(m.Op)
		if m.Op == opWait {
			s += fmt.Sprint(m.N[0])
		}
		said = append(said, s)
	}
	return strings.Join(said, " ")
}

// What a script sends while it runs crosses in one write when the engine
// waits: the calls a script starts together, and the opWait that says how
// many calls the engine waits for (one: myelin may run that call on the
// goroutine that read it). A wait after nothing was sent writes nothing.
func TestAScriptsCallsCrossInOneWriteWhenTheEngineWaits(t *testing.T) {
	delay := flushDelay
	flushDelay = time.Hour // no write but at a wait, however slow the machine
	t.Cleanup(func() { flushDelay = delay })
	var in bytes.Buffer
	for _, m := range []msg{
		{Op: opRun, N: [4]int64{DefaultMemory, DefaultStack, 30_000, DefaultOutput}, S: [3]string{
			`console.log("a"); await Promise.all([tools.t({}), tools.t({})]); await tools.t({}); return 1`, `["t"]`}},
		{Op: opSettle, N: [4]int64{0}, S: [3]string{"ok", ""}},
		{Op: opSettle, N: [4]int64{1}, S: [3]string{"ok", ""}},
		{Op: opSettle, N: [4]int64{2}, S: [3]string{"ok", ""}},
	} {
		if err := writeMsg(&in, m); err != nil {
			t.Fatal(err)
		}
	}
	var w writes
	out := newOutbox(&w)
	defer out.stop()
	if err := serve(&in, out, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range w.w {
		got = append(got, ops(t, b))
	}
	// taken at once; the print and both calls with the wait for two;
	// nothing after the first settle (the engine waits for the second,
	// having sent nothing since); the third call and the wait for it
	// alone; the end.
	want := []string{"t", "p c c w2", "c w1", "f e"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("the engine's writes: %q; want %q", got, want)
	}
}

// A call a script starts and does not await, while it runs on, reaches
// myelin within flushDelay, not when the script next waits: here the call
// cancels the script, which otherwise loops until its time limit.
func TestACallReachesMyelinWhileTheScriptRunsOn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := tool.MustFunc("test--stop", "Cancels the script.", func(context.Context, struct{}) (any, error) {
		cancel()
		return "ok", nil
	})
	r := newRig(t, Limits{}, stop)
	res := Run(ctx, Config{Tools: r.reg}, Limits{Time: 20 * time.Second}, `tools["test--stop"]({}); for (;;) {}`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "cancelled") {
		t.Errorf("a script whose call cancels it, while it loops: %q (error %v); want it cancelled by the call", text, res.IsError)
	}
}

// runGuarded runs the script and fails the test if Run has not returned
// within a minute: a hang guard, far past the limits the tests set.
func runGuarded(t *testing.T, ctx context.Context, c Config, lim Limits, code string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res := Run(ctx, c, lim, code)
		done <- fmt.Sprintf("%v (error %v)", res.Data, res.IsError)
	}()
	select {
	case text := <-done:
		return text
	case <-time.After(time.Minute):
		t.Fatalf("the script %q did not return: a tool call that ignores its context held it past its limit of %v", code, lim.Time)
		return ""
	}
}

// stuckTool is test--stuck, a tool that waits for the test's end,
// whatever its context says.
func stuckTool(t *testing.T) *tool.Tool {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return tool.MustFunc("test--stuck", "Waits for the test's end, whatever its context says.", func(context.Context, struct{}) (any, error) {
		<-release
		return "late", nil
	})
}

// A call the engine waits for alone runs on the goroutine that reads the
// engine: a limit or a cancel still ends the script at once, whatever the
// tool does with its context.
func TestACallThatIgnoresItsContextDoesNotHoldTheScriptPastItsLimit(t *testing.T) {
	r := newRig(t, Limits{}, stuckTool(t))
	c := Config{Tools: r.reg}
	text := runGuarded(t, context.Background(), c, Limits{Time: 300 * time.Millisecond}, `await tools["test--stuck"]({})`)
	if !strings.Contains(text, "stopped at its time limit of 300ms") {
		t.Errorf("a script awaiting a stuck call past its time limit: %s; want it stopped at its time limit", text)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	text = runGuarded(t, ctx, c, Limits{Time: 30 * time.Second}, `await tools["test--stuck"]({})`)
	if !strings.Contains(text, "cancelled") {
		t.Errorf("a script cancelled while it awaits a stuck call: %s; want it cancelled", text)
	}
}

// Each of the calls a script starts together gets its own result,
// whatever order they settle in.
func TestPromiseAllGetsEachCallsOwnResult(t *testing.T) {
	late := tool.MustFunc("test--late", "Returns its s after (10 - s) ms.", func(ctx context.Context, in struct {
		S int `json:"s"`
	}) (any, error) {
		time.Sleep(time.Duration(10-in.S) * time.Millisecond)
		return fmt.Sprint(in.S), nil
	})
	r := newRig(t, Limits{}, late)
	out, _ := r.run(`const rs = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(s => tools["test--late"]({s})));
const one = await tools["test--late"]({s: 10});
return rs.map(r => r.content[0].text).join(",") + ";" + one.content[0].text`)
	if want := "0,1,2,3,4,5,6,7,8,9;10"; out.IsError || out.Text != want {
		t.Errorf("the results of calls started together: %q (error %v); want %q", out.Text, out.IsError, want)
	}
}

// An engine killed while myelin runs the call it waits for fails the
// script, once the call is over: it is not taken for a script that ended.
func TestAnEngineKilledDuringACallFailsTheScript(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kills the engine by its pid")
	}
	pid := lastEnginePID(t)
	kill := tool.MustFunc("test--kill", "Kills the script's engine.", func(context.Context, struct{}) (any, error) {
		if err := syscall.Kill(*pid, syscall.SIGKILL); err != nil {
			return nil, err
		}
		return "killed", nil
	})
	r := newRig(t, Limits{}, kill)
	text := runGuarded(t, context.Background(), Config{Tools: r.reg}, Limits{Time: 30 * time.Second}, `await tools["test--kill"]({}); return "went on"`)
	if !strings.Contains(text, "the script engine stopped unexpectedly") {
		t.Errorf("a script whose engine was killed during its call: %s; want it failed saying the engine stopped", text)
	}
}

// Calls a script starts together, run each on a goroutine of its own,
// whose tools ignore their context, do not hold the script past its
// limit either; and a call's own timeout, shorter than the script's
// time, still ends it when its tool ignores its context.
func TestCallsStartedTogetherThatIgnoreTheirContextDoNotHoldTheScript(t *testing.T) {
	r := newRig(t, Limits{}, stuckTool(t))
	text := runGuarded(t, context.Background(), Config{Tools: r.reg}, Limits{Time: 300 * time.Millisecond}, `await Promise.all([tools["test--stuck"]({}), tools["test--stuck"]({})])`)
	if !strings.Contains(text, "stopped at its time limit of 300ms") {
		t.Errorf("a script awaiting two stuck calls past its time limit: %s; want it stopped at its time limit", text)
	}
	text = runGuarded(t, context.Background(), Config{Tools: r.reg, Timeout: 50 * time.Millisecond}, Limits{Time: 30 * time.Second},
		`const r = await tools["test--stuck"]({}); return r.content[0].text`)
	if !strings.Contains(text, "did not finish within 50ms") || strings.Contains(text, "time limit") {
		t.Errorf("a script awaiting a stuck call whose timeout is shorter than the script's: %s; want the call given up on at its timeout", text)
	}
}

// Results of calls that settle while another is being written cross in
// one write: the senders queued behind a write leave it to the last of
// them, which writes them all; the first, alone, writes at once.
func TestResultsQueuedBehindAWriteCrossInOneWrite(t *testing.T) {
	var w writes
	c := &conn{w: bufio.NewWriter(&w)}
	n := c.begin()
	if err := c.sendFor(n, msg{Op: opSettle, S: [3]string{"alone"}}); err != nil || len(w.w) != 1 {
		t.Fatalf("a lone result: %v, %d writes; want it written at once", err, len(w.w))
	}
	c.mu.Lock() // a write under way
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { _ = c.sendFor(n, msg{Op: opSettle, N: [4]int64{int64(i)}, S: [3]string{"ok"}}) })
	}
	until(t, "three senders to queue", func() bool { return c.queued.Load() == 3 })
	c.mu.Unlock()
	wg.Wait()
	if len(w.w) != 2 || ops(t, w.w[1]) != "s s s" {
		var got []string
		for _, b := range w.w[1:] {
			got = append(got, ops(t, b))
		}
		t.Errorf("three results queued behind a write: writes %q; want one write of all three", got)
	}
}

// A message's head made in a writer's buffer says what the message says,
// whatever the buffer held before: the flag of an error result written
// there before is not read as the next message's.
func TestAMessagesHeadInAReusedBufferIsItsOwn(t *testing.T) {
	var sent bytes.Buffer
	w := bufio.NewWriterSize(&sent, 4096)
	flagged := msg{Op: opSettle, Flag: true, N: [4]int64{7, -1, 3, 9}, S: [3]string{"error", "{}"}}
	plain := msg{Op: opSettle, N: [4]int64{8}, S: [3]string{"ok"}}
	if err := writeMsg(w, flagged); err != nil {
		t.Fatal(err)
	}
	sent.Reset()
	// the next head is made over the flagged one's bytes
	if err := writeMsg(w, plain); err != nil {
		t.Fatal(err)
	}
	if got, err := readMsg(&sent); err != nil || got != plain {
		t.Errorf("a message written over an error result's head read back as %+v (%v); want %+v", got, err, plain)
	}
}

// A call's result is not held back by another call of the script that
// still runs: the results of calls started together cross in one write
// only when they settle together.
func TestACallsResultIsNotHeldBackByACallStillRunning(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := tool.MustFunc("test--held", "Waits for the test's end.", func(ctx context.Context, _ struct{}) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "slow", nil
	})
	fast := tool.MustFunc("test--fast", "Returns at once.", func(context.Context, struct{}) (any, error) { return "fast", nil })
	r := newRig(t, Limits{}, slow, fast)
	text := runGuarded(t, context.Background(), Config{Tools: r.reg}, Limits{Time: 30 * time.Second},
		`const s = tools["test--held"]({}); const [a, b] = await Promise.all([tools["test--fast"]({}), tools["test--fast"]({})]); return a.content[0].text + b.content[0].text`)
	if text != "fastfast (error false)" {
		t.Errorf("a script awaiting two fast calls while a slow one runs: %s; want the fast ones' results", text)
	}
}

// failingWriter fails every write: an engine gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// The script itself is written by its own sender, who hears how the
// write went, even with another sender (a late result of the engine's
// last script) queued behind it: left to that one, a failed write was
// known only to it, and the script's run read "it exited without a word"
// where it could say why.
func TestTheScriptsSenderHearsItsWriteFailEvenWithASenderQueuedBehind(t *testing.T) {
	c := &conn{w: bufio.NewWriter(failingWriter{})}
	n := c.begin()
	c.queued.Add(1) // a sender in sendFor, queued behind
	defer c.queued.Add(-1)
	if err := c.sendNow(n, msg{Op: opRun, S: [3]string{"return 1"}}); err == nil {
		t.Fatal("the script's write to a broken pipe gave no error to its sender")
	}
	c.over(n)
	if err := c.sendNow(n, msg{Op: opRun}); !errors.Is(err, errScriptOver) {
		t.Fatalf("a script sent once it is over: %v; want errScriptOver", err)
	}
}
