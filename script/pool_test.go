package script

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// pooled is an Engines that keeps engines (p), closed when the test ends,
// and a Config over the rig's tools that uses it.
func pooled(t *testing.T, n int, p Pool, extra ...*tool.Tool) (*Engines, Config) {
	t.Helper()
	e := NewPooledEngines(n, p)
	t.Cleanup(e.Close)
	r := newRig(t, Limits{}, extra...)
	return e, Config{Tools: r.reg, Engines: e}
}

// in is ctx for the calls of conversation conv.
func in(conv string) context.Context {
	return tool.WithConversation(context.Background(), conv)
}

// killIdle kills the engine e keeps idle for conv, from outside (SIGKILL),
// and returns it once it is dead.
func killIdle(t *testing.T, e *Engines, conv string) *engineProc {
	t.Helper()
	p := idleOf(e, conv)
	if p == nil {
		t.Fatalf("no engine kept for %s (%v)", conv, e)
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	until(t, "the kept engine to die", func() bool { return !alive(p.pid) })
	return p
}

// settled waits until e has its engines started ahead up and none
// starting: a refill in flight is counted by liveEngines only once its
// process starts.
func settled(t *testing.T, e *Engines) {
	t.Helper()
	until(t, "the engines started ahead to be up", func() bool {
		e.pool.mu.Lock()
		defer e.pool.mu.Unlock()
		return e.pool.starting == 0 && len(e.pool.fresh) == e.pool.cfg.Warm
	})
}

// idleOf is the engine the pool keeps for conv, or nil.
func idleOf(e *Engines, conv string) *engineProc {
	e.pool.mu.Lock()
	defer e.pool.mu.Unlock()
	for _, p := range e.pool.idle {
		if p.conv == conv {
			return p
		}
	}
	return nil
}

// alive reports whether process pid is alive: not gone, nor a zombie
// nobody reaped yet.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func mustRun(t *testing.T, ctx context.Context, c Config, lim Limits, code string) string {
	t.Helper()
	res := Run(ctx, c, lim, code)
	if res.IsError {
		t.Fatalf("the script %q failed: %v", code, res.Data)
	}
	return fmt.Sprint(res.Data)
}

// The next script of a conversation runs in the engine its last one ran
// in, and sees nothing that one left: each script has a runtime of its
// own inside the engine.
func TestAConversationsNextScriptRunsInItsEngineWithFreshGlobals(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	mustRun(t, in("a"), c, Limits{}, `globalThis.leak = 1; Object.prototype.polluted = 2; Array.prototype.push = null; tools.x = 3; return "set"`)
	first := idleOf(e, "a")
	if first == nil {
		t.Fatalf("no engine kept for the conversation after its script (%v)", e)
	}
	got := mustRun(t, in("a"), c, Limits{}, `return [typeof leak, typeof ({}).polluted, typeof [].push, ("x" in tools ? "kept" : "undefined"), typeof globalThis.__myelin_call].join(" ")`)
	if got != "undefined undefined function undefined undefined" {
		t.Errorf("the second script saw %q of the first; want nothing (undefined undefined function undefined undefined)", got)
	}
	second := idleOf(e, "a")
	if second != first || second.used != 2 {
		t.Errorf("the second script of the conversation ran in another engine (pid %d, then %v); want the same, used twice", first.pid, second)
	}
}

// An engine that ran a conversation's script is never given to another
// conversation's, nor kept for a script outside any conversation.
func TestAnEngineIsNeverGivenToAnotherConversation(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	a := idleOf(e, "a")
	mustRun(t, in("b"), c, Limits{}, `return 1`)
	b := idleOf(e, "b")
	if a == nil || b == nil {
		t.Fatalf("the engines kept: a %v, b %v; want one each (%v)", a, b, e)
	}
	if a.pid == b.pid || a.used != 1 || b.used != 1 {
		t.Errorf("conversations a and b ran in pids %d and %d (used %d and %d); want two engines, one script each", a.pid, b.pid, a.used, b.used)
	}
	// The engine started ahead after b's script counts only once its
	// process is up: read the count before that and the refill the
	// script below causes is taken for a leak.
	settled(t, e)
	live := liveEngines.Load()
	mustRun(t, context.Background(), c, Limits{}, `return 1`)
	if p := idleOf(e, ""); p != nil {
		t.Errorf("the engine of a script outside any conversation was kept (pid %d)", p.pid)
	}
	if a.used != 1 || b.used != 1 || !alive(a.pid) || !alive(b.pid) {
		t.Errorf("a script outside any conversation touched a conversation's engine: used %d and %d", a.used, b.used)
	}
	// the outside script's engine ended, the one started ahead that it
	// took replaced: back to a's, b's and one started ahead
	settled(t, e)
	if n := liveEngines.Load(); n > live {
		t.Errorf("%d engines alive after a script outside any conversation, %d before: its engine was kept", n, live)
	}
}

// An engine whose script hit a limit, the engine's own or myelin's, is
// ended and not kept; so is one that ran its Pool.Scripts scripts.
func TestAnEngineIsEndedAfterALimitAndAfterItsScripts(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	for _, tc := range []struct {
		name string
		lim  Limits
		code string
	}{
		{"time", Limits{Time: 300 * time.Millisecond}, `for (;;) {}`},
		{"memory", Limits{Memory: 8 << 20}, `const a = []; for (;;) a.push({k: "v" + a.length})`},
		{"stack", Limits{}, `function f() { f() } f()`},
		{"output", Limits{Output: 1 << 10}, `console.log("x".repeat(4096))`},
		{"tool calls", Limits{ToolCalls: 1}, `await tools["test--text"]({s: "a"}); await tools["test--text"]({s: "b"})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "limit " + tc.name
			mustRun(t, in(conv), c, Limits{}, `return 1`)
			p := idleOf(e, conv)
			if p == nil {
				t.Fatalf("no engine kept after a script that hit no limit (%v)", e)
			}
			res := Run(in(conv), c, tc.lim, tc.code)
			if !res.IsError {
				t.Fatalf("the script hit no limit: %v", res.Data)
			}
			if q := idleOf(e, conv); q != nil {
				t.Errorf("an engine (pid %d, the first %d) was kept after a script that hit its %s limit", q.pid, p.pid, tc.name)
			}
			if alive(p.pid) {
				t.Errorf("the engine (pid %d) is alive after its script hit its %s limit", p.pid, tc.name)
			}
		})
	}
	e, c = pooled(t, 4, Pool{Scripts: 2})
	mustRun(t, in("n"), c, Limits{}, `return 1`)
	p := idleOf(e, "n")
	mustRun(t, in("n"), c, Limits{}, `return 1`)
	if q := idleOf(e, "n"); q != nil || alive(p.pid) {
		t.Errorf("the engine that ran its 2 scripts (Pool.Scripts) was kept (%v) or is alive (%v)", q, alive(p.pid))
	}
	mustRun(t, in("n"), c, Limits{}, `return 1`)
	if q := idleOf(e, "n"); q == nil || q.pid == p.pid {
		t.Errorf("the conversation's third script ran in %v; want a new engine", q)
	}
}

// A tool call that settles after its script returned is not sent to the
// engine, which may run the next script by then (and numbers its calls
// from 0 again); one sent before myelin saw the script end is dropped by
// the engine while it waits for the next script.
func TestALateResultDoesNotReachTheNextScript(t *testing.T) {
	var sent bytes.Buffer
	c := &conn{w: bufio.NewWriter(&sent)}
	first := c.begin()
	c.over(first)
	second := c.begin()
	if err := c.sendFor(first, msg{Op: opSettle, S: [3]string{"late"}}); !errors.Is(err, errScriptOver) || sent.Len() != 0 {
		t.Errorf("a result of the first script, sent during the second: %v, %d bytes written; want it dropped", err, sent.Len())
	}
	if err := c.sendFor(second, msg{Op: opSettle, S: [3]string{"mine"}}); err != nil || sent.Len() == 0 {
		t.Errorf("a result of the running script: %v, %d bytes written; want it sent", err, sent.Len())
	}

	var stream bytes.Buffer
	w := bufio.NewWriter(&stream)
	for _, m := range []msg{{Op: opSettle, S: [3]string{"late"}}, {Op: opRun, S: [3]string{"return 1", "[]"}}} {
		if err := writeMsg(w, m); err != nil {
			t.Fatal(err)
		}
	}
	m, err := nextScript(&stream)
	if err != nil || m.Op != opRun || m.S[0] != "return 1" {
		t.Errorf("the engine, given a late result then a script: %+v, %v; want the script", m, err)
	}
}

// The engines alive, kept or running, never pass the Engines' limit:
// scripts of other conversations end the idle ones to take their place,
// and a script waiting for an engine gets one.
func TestThePoolKeepsNoMoreEnginesThanItsLimit(t *testing.T) {
	const limit, scripts = 2, 6
	g := newGate()
	e, c := pooled(t, limit, Pool{Warm: 4}, g.tool())
	done := make(chan struct{})
	most := make(chan int32)
	go func() {
		n := liveEngines.Load()
		for {
			select {
			case <-done:
				most <- n
				return
			default:
				n = max(n, liveEngines.Load())
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for i := range scripts {
		mustRun(t, in(fmt.Sprint("one by one ", i)), c, Limits{}, `return 1`)
	}
	var wg sync.WaitGroup
	failed := make(chan string, scripts)
	for i := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := Run(in(fmt.Sprint("at once ", i)), c, Limits{}, `await tools["test--gate"]({}); return 1`)
			if res.IsError {
				failed <- fmt.Sprint(res.Data)
			}
		}()
	}
	until(t, "the limit's worth of scripts inside and the others waiting", func() bool {
		return g.inside.Load() == limit && e.waiting.Load() == scripts-limit
	})
	close(g.open)
	wg.Wait()
	close(done)
	if n := <-most; n > limit {
		t.Errorf("%d engine processes alive at once, over the limit of %d", n, limit)
	}
	close(failed)
	for f := range failed {
		t.Errorf("a script failed: %s", f)
	}
	e.Close()
	if n := liveEngines.Load(); n != 0 || e.kept() != 0 || e.Running() != 0 {
		t.Errorf("after Close: %d engine processes alive, %v; want none", n, e)
	}
	mustRun(t, in("after"), c, Limits{}, `return 1`)
	if n := liveEngines.Load(); n != 0 {
		t.Errorf("a script after Close left %d engines", n)
	}
}

// An engine kept idle past Pool.Idle is ended.
func TestAnIdleEngineIsEndedAfterItsIdleTime(t *testing.T) {
	e, c := pooled(t, 2, Pool{Idle: 50 * time.Millisecond})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	until(t, "the idle engines to be ended", func() bool { return liveEngines.Load() == 0 && e.kept() == 0 })
}

// helperEnv makes the test binary, started again by
// TestKeptEnginesDieWithMyelin, the myelin that keeps engines.
const helperEnv = "MYELIN_TEST_POOL_HELPER"

// A kept engine, idle or started ahead, dies with the myelin that kept
// it, as a running one does: the kernel kills it (PR_SET_PDEATHSIG), and
// elsewhere than Linux its stdin closes.
func TestKeptEnginesDieWithMyelin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperKeepsEngines$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "TMPDIR="+t.TempDir()) // the helper is killed before its own t.TempDir is removed: under ours
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A hang guard: the helper says its pids within seconds. It is
	// longer than the helper's own bounds put end to end (its until's
	// 30 s, then its cleanup's wait for an engine starting ahead, up to
	// engineStartLimit), so that a helper that fails says why first (in
	// CI it once said nothing before a 1-minute guard killed it).
	guard := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer guard.Stop()
	said := bufio.NewReader(out)
	line, err := said.ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("the helper said no pids: %v", err)
	}
	var idle, ahead int
	if _, err := fmt.Sscanf(line, "engines %d %d", &idle, &ahead); err != nil {
		// a helper that failed says why after its "--- FAIL" line, and
		// exits (or the guard kills it)
		rest, _ := io.ReadAll(said)
		cmd.Process.Kill()
		t.Fatalf("the helper said %q: %v", line+string(rest), err)
	}
	if !alive(idle) || !alive(ahead) {
		t.Fatalf("the kept engines %d and %d are not alive while myelin is", idle, ahead)
	}
	cmd.Process.Kill()
	cmd.Wait()
	until(t, fmt.Sprintf("the idle engine %d and the one started ahead %d to die with myelin", idle, ahead), func() bool {
		return !alive(idle) && !alive(ahead)
	})
}

// TestHelperKeepsEngines is the myelin of TestKeptEnginesDieWithMyelin:
// it keeps an engine idle for a conversation and one started ahead, says
// their pids, and waits to be killed.
func TestHelperKeepsEngines(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the helper of TestKeptEnginesDieWithMyelin")
	}
	// slow to say its pids (it failed once in CI, killed by the test's
	// hang guard after saying nothing for a minute): its goroutines on
	// stderr, for the log to show where it stood
	slow := time.AfterFunc(20*time.Second, func() {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "TestHelperKeepsEngines: no pids said after 20 s; its goroutines:\n%s\n", buf[:runtime.Stack(buf, true)])
	})
	e, c := pooled(t, 4, Pool{})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	var said string
	until(t, "an engine idle and one started ahead", func() bool {
		e.pool.mu.Lock()
		defer e.pool.mu.Unlock()
		if len(e.pool.idle) != 1 || len(e.pool.fresh) != 1 {
			return false
		}
		said = fmt.Sprintf("engines %d %d\n", e.pool.idle[0].pid, e.pool.fresh[0].pid)
		return true
	})
	slow.Stop()
	fmt.Print(said)
	time.Sleep(time.Minute) // killed long before, unless the test that started it died
}

// A background script whose runner took a slot ahead runs in an engine
// the pool keeps when there is one, and gives the slot back: no more
// engines than the limit, and none taken once it ended.
func TestABackgroundScriptTakesAKeptEngineAndGivesBackItsSlot(t *testing.T) {
	e, c := pooled(t, 2, Pool{})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	until(t, "an engine idle for a and one started ahead", func() bool { return e.kept() == 2 })
	slot := e.TryTake() // ends a's idle engine: no slot was free
	if slot == nil {
		t.Fatalf("no slot for the background script (%v)", e)
	}
	if idleOf(e, "a") != nil {
		t.Errorf("a's idle engine was kept though its slot was taken")
	}
	var w wakes
	h := w.hooks()
	h.Slot = slot
	if res := RunBackground(in("b"), c, Limits{}, `return 1`, h); res.IsError {
		t.Fatalf("the background script: %v", res.Data)
	}
	if n := liveEngines.Load(); n > 2 {
		t.Errorf("%d engines alive, over the limit of 2", n)
	}
	if idleOf(e, "b") == nil || e.Running() != 0 {
		t.Errorf("after the background script: b's engine kept %v, %v; want it kept and none running", idleOf(e, "b") != nil, e)
	}
}

// A kept engine that was killed while it waited (from outside: the OOM
// killer, a user) does not fail the conversation's next script: the
// script never ran in it, and runs in another engine.
func TestAKeptEngineKilledWhileIdleDoesNotFailTheNextScript(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	p := killIdle(t, e, "a")
	res := Run(in("a"), c, Limits{}, `return "ran"`)
	if res.IsError || res.Data != "ran" {
		t.Errorf("the next script: %v (error %v); want it run in another engine", res.Data, res.IsError)
	}
	if q := idleOf(e, "a"); q == nil || q.pid == p.pid {
		t.Errorf("after the next script, a's engine is %v; want a new one kept", q)
	}
}

// A kept engine that dies while it runs a script (the OOM killer, a kill
// from outside) fails that script at once, saying so: the script may have
// called tools already, so it is not run again — before the engine said
// it took each script, one running silently was run again in engine after
// engine until its time limit.
func TestAKeptEngineKilledWhileItRunsAScriptFailsThatScript(t *testing.T) {
	e, c := pooled(t, 4, Pool{})
	mustRun(t, in("a"), c, Limits{}, `return 1`)
	p := idleOf(e, "a")
	if p == nil {
		t.Fatalf("no engine kept for a (%v)", e)
	}
	go func() {
		// the script has taken the engine once it is no longer idle
		until(t, "a's engine to take the script", func() bool { return idleOf(e, "a") == nil })
		time.Sleep(100 * time.Millisecond)
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}()
	start := time.Now()
	res := Run(in("a"), c, Limits{Time: 20 * time.Second}, `let i = 0; while (true) { i++ }`)
	text, _ := res.Data.(string)
	if !res.IsError || !strings.Contains(text, "stopped unexpectedly") {
		t.Fatalf("the script whose engine was killed: %q (error %v); want it failed saying the engine stopped unexpectedly", text, res.IsError)
	}
	if took := time.Since(start); took >= 20*time.Second {
		t.Errorf("the script ran until its time limit (%v): it was run again after its engine died", took)
	}
}

// An engine that does not say it is ready within engineStartLimit is
// ended, and the start fails saying so: a start that hung (a blocked init)
// held its slot until Close, and a script waited on it past its limits.
func TestAnEngineThatDoesNotStartInTimeIsEnded(t *testing.T) {
	limit := engineStartLimit
	t.Cleanup(func() { engineStartLimit = limit })
	engineStartLimit = time.Microsecond // no process is up that soon
	c, err := startEngine()
	if err == nil {
		c.kill()
		c.wait()
		t.Fatal("an engine started within a microsecond; want its start ended")
	}
	if !strings.Contains(err.Error(), "did not say it was ready within") {
		t.Errorf("the start's error: %v; want it to say the engine was not ready in time", err)
	}
	until(t, "no engine process left", func() bool { return liveEngines.Load() == 0 })
}
