package script

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// An engine that dies while myelin runs the call it waits for alone ends
// that call: the script is over, so the call's context ends, as it did
// when each call ran on a goroutine of its own (Run returned on the
// engine's EOF, and its deferred cancel ended the call). A tool that
// works to its context (a shell command, a subagent) must not run on for
// a script whose engine is gone, holding Run and its engine slot (a
// background script's limit is its lifetime plus a minute).
func TestAnEngineKilledDuringACallEndsTheCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kills the engine by its pid")
	}
	pid := lastEnginePID(t)
	release := make(chan struct{})
	saw := make(chan string, 1)
	killThenWait := tool.MustFunc("test--kill-wait", "Kills the script's engine, then works until its context ends.", func(ctx context.Context, _ struct{}) (any, error) {
		if err := syscall.Kill(*pid, syscall.SIGKILL); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			saw <- "the call's context ended"
		case <-release:
			saw <- "the call ran on until the test released it"
		}
		return "done", nil
	})
	r := newRig(t, Limits{}, killThenWait)
	done := make(chan string, 1)
	go func() {
		res := Run(context.Background(), Config{Tools: r.reg}, Limits{Time: 5 * time.Minute}, `await tools["test--kill-wait"]({}); return "went on"`)
		done <- fmt.Sprintf("%v (error %v)", res.Data, res.IsError)
	}()
	var text string
	select {
	case text = <-done:
	case <-time.After(20 * time.Second): // a hang guard, far past a kill's few milliseconds
		close(release)
		text = <-done
	}
	if got := <-saw; got != "the call's context ended" {
		t.Errorf("a call whose script's engine died during it: %s; want its context ended once the engine is gone (the script returned: %s)", got, text)
	}
	if !strings.Contains(text, "the script engine stopped unexpectedly") {
		t.Errorf("a script whose engine was killed during its call: %s; want it failed saying the engine stopped", text)
	}
}

// A background script's print before a call it awaits is in its journal
// before the call runs: the call can see it there.
func TestABackgroundScriptsPrintReachesTheJournalBeforeItsCall(t *testing.T) {
	journal, err := os.CreateTemp(t.TempDir(), "journal")
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	read := func() string {
		b, err := os.ReadFile(journal.Name())
		if err != nil {
			return "unreadable: " + err.Error()
		}
		return string(b)
	}
	look := tool.MustFunc("test--look", "Returns the journal so far.", func(ctx context.Context, _ struct{}) (any, error) {
		return read(), nil
	})
	r := newRig(t, Limits{}, look)
	for _, code := range []string{
		// awaited alone: run on the reading goroutine
		`console.log("before"); const r = await tools["test--look"]({}); return r.content[0].text`,
		// not awaited, the script running on: flushed by the timer
		`console.log("before"); const p = tools["test--look"]({}); let x = 0; for (let i = 0; i < 3e6; i++) x += i; const r = await p; return r.content[0].text`,
	} {
		if err := journal.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := journal.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		res := RunBackground(context.Background(), Config{Tools: r.reg}, Limits{Time: 30 * time.Second}, code, Hooks{ID: "bg-order", Journal: journal})
		if text := fmt.Sprint(res.Data); res.IsError || !strings.Contains(text, "before") {
			t.Errorf("script %q: the journal its call saw: %q (error %v); want the print made before the call in it", code, text, res.IsError)
		}
	}
}

// A conversation's engine kept by the pool starts its next script with
// nothing of the last one's buffered: a script that left a call started
// and not awaited, ended, and the next script's first message is its own.
func TestAKeptEngineCarriesNothingBufferedToTheNextScript(t *testing.T) {
	eng := NewPooledEngines(2, Pool{Warm: 1})
	t.Cleanup(eng.Close)
	r := newRig(t, Limits{})
	c := Config{Tools: r.reg, Engines: eng}
	ctx := tool.WithConversation(context.Background(), "conv-review")
	for i := range 5 {
		res := Run(ctx, c, Limits{Time: 30 * time.Second}, fmt.Sprintf(`console.log("s%d"); tools["test--text"]({s: "x"}); let x = 0; for (let i = 0; i < 1e5; i++) x += i; return "r%d"`, i, i))
		want := fmt.Sprintf("s%d\nr%d", i, i)
		if text := fmt.Sprint(res.Data); res.IsError || text != want {
			t.Errorf("script %d in a kept engine: %q (error %v); want %q", i, text, res.IsError, want)
		}
	}
}

// A script run again in another engine, its kept engine found dead, gets
// its tool calls run: the dead engine's end must not cancel them (a fix
// of TestAnEngineKilledDuringACallEndsTheCall that cancels the calls'
// context when the engine dies must give the retry a context of its own).
func TestAScriptRunAgainAfterItsKeptEngineDiedRunsItsCalls(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	r := newRig(t, Limits{})
	c.Tools = r.reg
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	killIdle(t, e, "a")
	res := Run(in("a"), c, Limits{}, `const r = await tools["test--text"]({s: "ran"}); return r.content[0].text`)
	if res.IsError || res.Data != "ran" {
		t.Errorf("the next script, its call: %v (error %v); want it run in another engine, its call too", res.Data, res.IsError)
	}
}

// What a script printed before it loops to its time limit is in its
// result, through a real engine process (the end-to-end case of the next
// test's).
func TestAPrintBeforeALoopToTheLimitIsKept(t *testing.T) {
	r := newRig(t, Limits{})
	res := Run(context.Background(), Config{Tools: r.reg}, Limits{Time: 2 * time.Second}, `console.log("printed first"); for (;;) {}`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "printed first") || !strings.Contains(text, "time limit") {
		t.Errorf("a script that prints and loops to its limit: %q (error %v); want its print and the limit", text, res.IsError)
	}
}

// lastEnginePID is where the pid of the engine started last for this
// test is kept (read it once a script runs), startEngine wrapped until t
// ends.
func lastEnginePID(t *testing.T) *int {
	start := startEngine
	t.Cleanup(func() { startEngine = start })
	pid := new(int)
	startEngine = func() (*conn, error) {
		c, err := start()
		if err == nil {
			*pid = c.pid
		}
		return c, err
	}
	return pid
}

// An engine that dies while myelin runs the call it waits for alone, the
// call's tool ignoring its context, ends the script at once: the call
// runs on the goroutine that read it, which the script leaves behind.
func TestAnEngineKilledDuringACallThatIgnoresItsContextEndsTheScript(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kills the engine by its pid")
	}
	pid := lastEnginePID(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	killThenHang := tool.MustFunc("test--kill-hang", "Kills the script's engine, then waits for the test's end, whatever its context says.", func(context.Context, struct{}) (any, error) {
		if err := syscall.Kill(*pid, syscall.SIGKILL); err != nil {
			return nil, err
		}
		<-release
		return "late", nil
	})
	r := newRig(t, Limits{}, killThenHang)
	// a time limit before the call's timeout (tool.DefaultTimeout) ends:
	// else the call runs on a goroutine of the dispatcher's
	text := runGuarded(t, context.Background(), Config{Tools: r.reg}, Limits{Time: 90 * time.Second}, `await tools["test--kill-hang"]({}); return "went on"`)
	if !strings.Contains(text, "the script engine stopped unexpectedly") {
		t.Errorf("a script whose engine was killed during a call that hangs: %s; want it failed saying the engine stopped", text)
	}
}

// timedWrites records each write the engine makes and when.
type timedWrites struct {
	writes
	at []time.Time
}

func (w *timedWrites) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.at = append(w.at, time.Now())
	w.mu.Unlock()
	return w.writes.Write(p)
}

// A script that prints and then loops to its time limit ends itself, its
// print crossing with its end, before myelin's kill would come at the
// limit: its buffer's timer is not what carries the print (here it never
// fires, as on a machine too loaded to run the timer's goroutine while
// the loop holds a core; CI under -race once lost a print that way).
func TestAScriptLoopingToItsLimitEndsWithItsPrintsBeforeTheKill(t *testing.T) {
	delay := flushDelay
	flushDelay = time.Hour
	t.Cleanup(func() { flushDelay = delay })
	const limit = 2 * time.Second
	var in bytes.Buffer
	if err := writeMsg(&in, msg{Op: opRun, N: [4]int64{DefaultMemory, DefaultStack, limit.Milliseconds(), DefaultOutput}, S: [3]string{
		`console.log("printed first"); for (;;) {}`, `[]`}}); err != nil {
		t.Fatal(err)
	}
	kill := time.Now().Add(limit) // where myelin's kill comes (run.loop's timer)
	var w timedWrites
	out := newOutbox(&w)
	defer out.stop()
	if err := serve(&in, out, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, b := range w.w {
		if w.at[i].After(kill) {
			break // killed before this write
		}
		got = append(got, ops(t, b))
	}
	if want := "t | p f e"; strings.Join(got, " | ") != want {
		t.Errorf("what the engine wrote before the kill at its limit: %q; want %q (the print with the script's end)", got, want)
	}
}
