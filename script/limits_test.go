package script

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// A script that catches the engine's own errors in a loop (stack overflow,
// out of memory) made the engine poll its interrupt seconds apart: one ran
// 8 s under a 3 s limit, and went on after the call returned. The limit
// now ends the engine's process: the call returns within the limit plus a
// second, and nothing of the engine is left.
func TestTheTimeLimitStopsAScriptThatCatchesEngineErrors(t *testing.T) {
	const limit = time.Second
	fill := `const keep = []; try { for (;;) keep.push("x".repeat(1 << 16) + keep.length) } catch (e) {}; `
	for _, tc := range []struct{ name, code string }{
		{"deep recursion caught at every level", `function f() { try { f() } catch (e) { f() } } f()`},
		{"deep recursion caught in a loop, memory full", fill + `for (;;) { try { (function f() { f() })() } catch (e) {} }`},
		{"recursion caught, then finally recursing again", `function f() { try { f() } finally { f() } } for (;;) { try { f() } catch (e) {} }`},
		{"a huge allocation caught in a loop", `for (;;) { try { "x".repeat(1 << 30) } catch (e) {} }`},
		{"allocations at the memory limit caught in a loop", fill + `for (;;) { try { keep.push({a: keep.length}) } catch (e) {} }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goroutines := runtime.NumGoroutine()
			// The outer bound a hang would meet: far past limit plus a second.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			t0 := time.Now()
			res := Run(ctx, Config{}, Limits{Time: limit, Memory: 32 << 20}, tc.code)
			elapsed := time.Since(t0)
			if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "stopped at its time limit of 1s") {
				t.Errorf("got %.300q (error %v), want the time limit", text, res.IsError)
			}
			if elapsed > limit+time.Second {
				t.Errorf("returned after %v, past its limit plus a second", elapsed)
			}
			if n := liveEngines.Load(); n != 0 {
				t.Errorf("%d engines still alive after the call returned", n)
			}
			// a goroutine that closed what Run waited for may still be
			// on its way out (the engine's watcher, exited): a second
			// for it, but none may stay
			n := runtime.NumGoroutine()
			for wait := time.Now().Add(time.Second); n > goroutines && time.Now().Before(wait); n = runtime.NumGoroutine() {
				time.Sleep(time.Millisecond)
			}
			if n > goroutines {
				t.Errorf("%d goroutines after the call, %d before", n, goroutines)
			}
		})
	}
}

// What a script throws counts toward the output limit like what it prints
// and returns: a 60 MiB thrown string made a 62 MB spill file.
func TestAThrownValueCountsTowardTheOutputLimit(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct{ name, code, want string }{
		{"a thrown string", `throw "y".repeat(3 << 20)`, "the script failed: it threw a value of 3.0 MiB, over its output limit of 1 MiB; its start, cut there:\nyyyy"},
		{"a thrown error", "\nthrow new Error(\"z\".repeat(3 << 20))", "the script failed at line 2: it threw a value of 3.0 MiB, over its output limit of 1 MiB; its start, cut there:\nError: zzzz"},
		{"after a print, what is left", `console.log("p".repeat(1000)); throw "y".repeat(limit)`, "the script failed: it threw a value of 1.0 MiB, over its output limit of 1 MiB; its start, cut there:\nyyyy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Run(context.Background(), Config{}, Limits{Output: limit}, strings.ReplaceAll(tc.code, "limit", fmt.Sprint(limit)))
			text := fmt.Sprint(res.Data)
			if !res.IsError || !strings.HasPrefix(text, tc.want) {
				t.Errorf("got %.300q, want it to start %q", text, tc.want)
			}
			if len(text) > limit+1000 {
				t.Errorf("the result holds %d bytes, over the output limit of %d and its notice", len(text), limit)
			}
		})
	}
}

// When the engine runs out of memory so far that it cannot make an error
// (it throws null) or settle the script's promise, the result says the
// script ran out of memory, not "uncaught null" nor "a promise that
// nothing will settle".
func TestAScriptOutOfMemorySaysSoWhateverTheEngineCouldStillDo(t *testing.T) {
	fill := `const a = []; try { for (;;) a.push([a.length]) } catch (e) {}; `
	for _, tc := range []struct{ name, code, want string }{
		{"JSON.stringify of a full heap, caught and thrown again", fill + `try { JSON.stringify(a) } catch (e) { throw e }`, "it ran out of memory (its limit is 8 MiB)"},
		{"returning a full heap", `const a = []; try { for (;;) a.push({k: "v" + a.length}) } catch (e) {}; return a`, "it ran out of memory (its limit is 8 MiB)"},
		{"an error too large to settle", `throw new Error("x".repeat(5 << 20))`, "it ran out of memory (its limit is 8 MiB)"},
		{"allocating without end", `const a = []; for (;;) a.push({k: "v" + a.length})`, "it ran out of memory (its limit is 8 MiB), with no room left even for an error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Run(context.Background(), Config{}, Limits{Time: 30 * time.Second, Memory: 8 << 20}, tc.code)
			text := fmt.Sprint(res.Data)
			if !res.IsError || !strings.Contains(text, tc.want) || strings.Contains(text, "nothing will settle") {
				t.Errorf("got %.300q, want %q", text, tc.want)
			}
		})
	}
	// and a script that does wait for nothing, with memory to spare, says so
	for _, code := range []string{`await new Promise(() => {})`, `return new Promise(() => {})`, `throw await new Promise(() => {})`} {
		res := Run(context.Background(), Config{}, Limits{Time: 30 * time.Second, Memory: 8 << 20}, code)
		if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "waiting for a promise that nothing will settle") {
			t.Errorf("%s: got %.300q", code, text)
		}
	}
}

// timeout_ms is clamped to the configured limit, so that no number makes
// the limit larger, or smaller by overflowing (18446744073710 ms made a
// limit of 448 µs); a negative one is refused by the schema.
func TestTimeoutMSIsClampedToTheConfiguredLimit(t *testing.T) {
	r := newRig(t, Limits{Time: 2 * time.Second})
	call := func(in string) result0 {
		out := r.d.Call(context.Background(), tool.Call{ID: "c", Name: Name, Input: json.RawMessage(in)})
		return result0{out.Text, out.IsError}
	}
	// 50 ms of work: longer than 448 µs.
	const work = `const t = Date.now(); while (Date.now() - t < 50) {} return 'ran'`
	for _, tc := range []struct {
		name, in string
		want     result0
	}{
		{"one that overflowed a duration", `{"code":"` + work + `","timeout_ms":18446744073710}`, result0{"ran", false}},
		{"the largest int64", `{"code":"` + work + `","timeout_ms":9223372036854775807}`, result0{"ran", false}},
		{"past any int64", `{"code":"` + work + `","timeout_ms":1e30}`, result0{"ran", false}},
		{"over the limit: the limit", `{"code":"for (;;) {}","timeout_ms":5000}`, result0{"the script was stopped at its time limit of 2s", true}},
		{"under the limit: lowers it", `{"code":"for (;;) {}","timeout_ms":100}`, result0{"the script was stopped at its time limit of 100ms", true}},
		{"0: the limit", `{"code":"return 'ran'","timeout_ms":0}`, result0{"ran", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := call(tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := call(`{"code":"1","timeout_ms":-1}`); !got.isError || !strings.Contains(got.text, "timeout_ms") {
		t.Errorf("a negative timeout_ms: %+v", got)
	}
	schema, _ := json.Marshal(r.exec.InputSchema.Properties["timeout_ms"])
	if !strings.Contains(string(schema), "from 1 to 2000") || !strings.Contains(string(schema), `"type":"integer"`) {
		t.Errorf("the schema does not give the range: %s", schema)
	}
}

type result0 struct {
	text    string
	isError bool
}

// An engine that goes away without saying how the script ended is an
// error result that says so, not a hang or an empty success.
func TestAnEngineThatDiesIsAnErrorResult(t *testing.T) {
	start := startEngine
	t.Cleanup(func() { startEngine = start })
	startEngine = func() (*conn, error) {
		c, err := start()
		if err != nil {
			return nil, err
		}
		c.kill() // before it reads the script
		return c, nil
	}
	res := Run(context.Background(), Config{}, Limits{}, `return 1`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.HasPrefix(text, "the script engine stopped unexpectedly") {
		t.Errorf("got %q (error %v)", text, res.IsError)
	}
	startEngine = func() (*conn, error) {
		c, err := start()
		if err != nil {
			return nil, err
		}
		c.send(msg{Op: 'x'}) // not a script: the engine says so on stderr and exits 1
		return c, nil
	}
	res = Run(context.Background(), Config{}, Limits{}, `return 1`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.HasPrefix(text, "the script engine stopped unexpectedly") ||
		!strings.Contains(text, "exit status 1: the first message is op 'x', not a script") {
		t.Errorf("an engine that exits 1: %q (error %v)", text, res.IsError)
	}
	startEngine = func() (*conn, error) { return nil, fmt.Errorf("fork/exec /proc/self/exe: permission denied") }
	res = Run(context.Background(), Config{}, Limits{}, `return 1`)
	if text := fmt.Sprint(res.Data); !res.IsError || text != "starting the script engine: fork/exec /proc/self/exe: permission denied" {
		t.Errorf("an engine that cannot start: %q (error %v)", text, res.IsError)
	}
}
