package script

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// rig is a registry of test tools, a workspace, and code_execution over
// them.
type rig struct {
	t    *testing.T
	reg  *tool.Registry
	ws   *workspace.Workspace
	exec *tool.Tool
	d    *tool.Dispatcher
}

func newRig(t *testing.T, lim Limits, extra ...*tool.Tool) *rig {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg := &tool.Registry{}
	tools := append(ws.Tools(),
		tool.MustFunc("test--text", "Returns a string.", func(ctx context.Context, in struct {
			S string `json:"s"`
		}) (any, error) {
			return in.S, nil
		}),
		tool.MustFunc("test--value", "Returns a map.", func(ctx context.Context, in struct{}) (any, error) {
			return map[string]any{"b": 2, "a": []int{1}}, nil
		}),
		tool.MustFunc("test--fail", "Fails.", func(ctx context.Context, in struct{}) (any, error) {
			return nil, fmt.Errorf("no such thing")
		}),
		tool.MustFunc("test--structured", "Text and structured content.", func(ctx context.Context, in struct{}) (any, error) {
			return result.Result{Data: "two", Structured: json.RawMessage(`{"n":2,"list":["x","y"]}`)}, nil
		}),
		tool.MustFunc("test--slow", "Sleeps 200 ms.", func(ctx context.Context, in struct{}) (any, error) {
			select {
			case <-time.After(200 * time.Millisecond):
				return "slept", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
	)
	if err := reg.Add(append(tools, extra...)...); err != nil {
		t.Fatal(err)
	}
	exec := Tool(Config{Tools: reg, Env: result.Env{Store: ws}, Limits: lim})
	if err := reg.Add(exec); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, reg: reg, ws: ws, exec: exec, d: &tool.Dispatcher{Tools: reg, Env: result.Env{Store: ws}}}
}

// run runs code as the model's call would, and returns what the model gets
// and the structured content.
func (r *rig) run(code string) (result.Output, map[string]any) {
	r.t.Helper()
	in, _ := json.Marshal(map[string]string{"code": code})
	out := r.d.Call(context.Background(), tool.Call{ID: "call_1", Name: Name, Input: in})
	var s map[string]any
	if out.Structured != nil {
		if err := json.Unmarshal(out.Structured, &s); err != nil {
			r.t.Fatalf("structured %s: %v", out.Structured, err)
		}
	}
	return out, s
}

func TestTheModelGetsThePrintedOutputThenTheValue(t *testing.T) {
	r := newRig(t, Limits{})
	for _, tc := range []struct{ name, code, want string }{
		{"a string value as itself", `return "héllo \"there\""`, `héllo "there"`},
		{"other values as compact JSON", `return {b: [1, 2], a: "x"}`, `{"b":[1,2],"a":"x"}`},
		{"prints then the value", "console.log('one', 2, {x: 1}); console.error('two'); return 3", "one 2 {\"x\":1}\ntwo\n3"},
		{"prints alone", "console.log('only')", "only\n"},
		{"nothing: the structured content stands in (contract §4)", "", `{"output":"","value":null,"toolCalls":[]}`},
		{"top-level await", "const r = await tools['test--text']({s: 'awaited'}); return r.content[0].text", "awaited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := r.run(tc.code)
			if out.IsError || out.Text != tc.want {
				t.Errorf("got %q (error %v), want %q", out.Text, out.IsError, tc.want)
			}
		})
	}
}

func TestAToolCallReturnsAnMCPShapedResult(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`
		const s = await tools["test--text"]({s: "plain \"text\"\nline"});
		const j = await tools["test--text"]({s: '{"k": [1, 2]}'});
		const v = await tools["test--value"]({});
		const f = await tools["test--fail"]({});
		const st = await tools["test--structured"]({});
		return {
			s: s.content[0].text, sType: s.content[0].type, sErr: s.isError, sHasStructured: "structuredContent" in s,
			j: JSON.parse(j.content[0].text).k[1],
			v: v.content[0].text,
			f: f.content[0].text, fErr: f.isError,
			st: st.content[0].text, stS: st.structuredContent,
		}`)
	if out.IsError {
		t.Fatal(out.Text)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out.Text), &got); err != nil {
		t.Fatalf("%q: %v", out.Text, err)
	}
	want := map[string]any{
		"s": "plain \"text\"\nline", "sType": "text", "sErr": false, "sHasStructured": false,
		"j": 2.0,
		"v": `{"a":[1],"b":2}`,
		"f": "no such thing", "fErr": true,
		"st": "two", "stS": map[string]any{"n": 2.0, "list": []any{"x", "y"}},
	}
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}

func TestAResultReachesTheScriptWholeNotCappedAtTheInlineCap(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`const r = await tools["test--text"]({s: "x".repeat(100000)}); return r.content[0].text.length`)
	if out.Text != "100000" {
		t.Errorf("the script saw %s characters, want 100000", out.Text)
	}
}

func TestStructuredContentRecordsOutputValueAndToolCalls(t *testing.T) {
	r := newRig(t, Limits{})
	_, s := r.run(`console.log("hi"); await tools["test--fail"]({}); await tools["test--text"]({s: "abc"}); return [1]`)
	if s["output"] != "hi\n" || fmt.Sprint(s["value"]) != "[1]" {
		t.Errorf("structured %v", s)
	}
	calls, _ := s["toolCalls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("toolCalls %v", s["toolCalls"])
	}
	first := calls[0].(map[string]any)
	if first["name"] != "test--fail" || first["isError"] != true || first["inputBytes"] != 2.0 {
		t.Errorf("first call %v", first)
	}
}

func TestAThrownErrorIsAnErrorResultWithItsLine(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run("console.log('before');\nconst x = null;\nx.foo;")
	if !out.IsError || out.Text != "the script failed at line 3: TypeError: cannot read property 'foo' of null\nWhat it printed before:\nbefore\n" {
		t.Errorf("got %q (error %v)", out.Text, out.IsError)
	}
	out, _ = r.run("let a = ;")
	if !out.IsError || !strings.Contains(out.Text, "SyntaxError") || !strings.Contains(out.Text, "line 1") {
		t.Errorf("syntax error: %q", out.Text)
	}
	out, _ = r.run(`throw "a string"`)
	if !out.IsError || out.Text != "the script failed: uncaught a string" {
		t.Errorf("thrown string: %q", out.Text)
	}
}

func TestPromiseAllRunsToolCallsConcurrently(t *testing.T) {
	var running, most atomic.Int32
	probe := tool.MustFunc("test--probe", "Counts concurrent calls.", func(ctx context.Context, in struct{}) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		return "ok", nil
	})
	r := newRig(t, Limits{}, probe)
	out, _ := r.run(`const rs = await Promise.all(Array.from({length: 10}, () => tools["test--probe"]({}))); return rs.length`)
	if out.Text != "10" {
		t.Fatalf("got %q", out.Text)
	}
	if most.Load() != 10 {
		t.Errorf("at most %d calls ran at once, want all 10", most.Load())
	}
}

func TestAScriptCannotCallCodeExecution(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`return "code_execution" in tools`)
	if out.Text != "false" {
		t.Errorf("tools has code_execution: %q", out.Text)
	}
	out, _ = r.run(`return await tools["code_execution"]({code: "return 1"})`)
	if !out.IsError || !strings.Contains(out.Text, `tools has no tool "code_execution": a script cannot run code_execution`) {
		t.Errorf("calling code_execution from a script: %q", out.Text)
	}
	if !strings.Contains(r.exec.Description, "workspace--read") || strings.Contains(r.exec.Description, "code_execution,") {
		t.Errorf("description lists %q", r.exec.Description)
	}
}

func TestTheSandboxHasNoWayOutButTheTools(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`return [typeof require, typeof std, typeof os, typeof setTimeout, typeof fetch, typeof XMLHttpRequest, typeof process, typeof __myelin_call, typeof __myelin_print].join(" ")`)
	if out.Text != strings.TrimSpace(strings.Repeat("undefined ", 9)) {
		t.Errorf("got %q", out.Text)
	}
	out, _ = r.run(`await import("fs")`)
	if !out.IsError {
		t.Errorf("import worked: %q", out.Text)
	}
}

func TestLimitsStopTheScriptWithAnErrorNamingThem(t *testing.T) {
	lim := Limits{Time: 500 * time.Millisecond, Memory: 32 << 20, Output: 1 << 20, ToolCalls: 50}
	r := newRig(t, lim)
	// The engine's own limits, with time to reach them even under -race.
	engine := Limits{Time: 30 * time.Second, Memory: 32 << 20}
	re := newRig(t, engine)
	for _, tc := range []struct{ name, code, want string }{
		{"a memory bomb", `const a = []; for (;;) a.push("x".repeat(1000) + a.length)`, "ran out of memory (its limit is 32 MiB)"},
		{"deep recursion", `function f(n) { return f(n + 1) + 1 } f(0)`, "stack overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, _ := re.run(tc.code); !out.IsError || !strings.Contains(out.Text, tc.want) {
				t.Errorf("got %.300q (error %v), want %q", out.Text, out.IsError, tc.want)
			}
		})
	}
	// The time limit, bounded by itself plus a second.
	for _, tc := range []struct{ name, code string }{
		{"an infinite loop", `for (;;) {}`},
		{"a try/catch around an infinite loop", `for (;;) { try { for (;;) {} } catch (e) {} }`},
		{"waiting on slow tools past the time", `for (;;) await tools["test--slow"]({})`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			out, _ := r.run(tc.code)
			if want := "stopped at its time limit of 500ms"; !out.IsError || !strings.Contains(out.Text, want) {
				t.Errorf("got %.300q (error %v), want %q", out.Text, out.IsError, want)
			}
			if el := time.Since(t0); el > lim.Time+time.Second {
				t.Errorf("stopped after %v, past its limit plus a second", el)
			}
		})
	}
	// The other limits, with time to reach them even under -race: the
	// engine's process starts within the time limit.
	ro := newRig(t, Limits{Time: 30 * time.Second, Memory: 32 << 20, Output: 1 << 20, ToolCalls: 50})
	for _, tc := range []struct{ name, code, want string }{
		{"a 100 MB print", `const s = "y".repeat(1 << 20); for (let i = 0; i < 100; i++) console.log(s)`, "printed and returned is more than its output limit of 1 MiB"},
		{"a print caught in a try", `const s = "y".repeat(1 << 20); for (let i = 0; i < 100; i++) try { console.log(s) } catch (e) {}`, "printed and returned is more than its output limit of 1 MiB"},
		{"a value over the output limit", `return "z".repeat(2 << 20)`, "printed and returned is more than its output limit of 1 MiB"},
		{"too many tool calls", `for (let i = 0; i < 10000; i++) try { await tools["test--text"]({s: "x"}) } catch (e) {}`, "more tool calls than its limit of 50"},
		{"a promise nothing settles", `await new Promise(() => {})`, "waiting for a promise that nothing will settle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, _ := ro.run(tc.code); !out.IsError || !strings.Contains(out.Text, tc.want) {
				t.Errorf("got %.300q (error %v), want %q", out.Text, out.IsError, tc.want)
			}
		})
	}
	// and the next script runs
	if out, _ := r.run(`return "fine"`); out.Text != "fine" {
		t.Errorf("after the limits: %q", out.Text)
	}
}

func TestAHugeOutputSpillsLikeAnyResult(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`for (let i = 0; i < 100000; i++) console.log("line " + i)`)
	if out.IsError || out.SpillPath == "" || !strings.HasPrefix(out.Text, "line 0\nline 1\n") {
		t.Fatalf("error %v spill %q: %.200q", out.IsError, out.SpillPath, out.Text)
	}
}

func TestCancellingTheCallStopsTheScript(t *testing.T) {
	r := newRig(t, Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	res := Run(ctx, Config{Tools: r.reg}, Limits{}, `for (;;) {}`)
	if !res.IsError || !strings.Contains(fmt.Sprint(res.Data), "cancelled") {
		t.Errorf("got %v (error %v)", res.Data, res.IsError)
	}
}

func TestWhatAScriptPrintsAndReturnsIsWellFormed(t *testing.T) {
	r := newRig(t, Limits{})
	out, _ := r.run(`console.log("lone \uD800 high"); return "pair \uD83C\uDF89 and lone \uDC00"`)
	if want := "lone \uFFFD high\npair 🎉 and lone \uFFFD"; out.Text != want {
		t.Errorf("got %q, want %q", out.Text, want)
	}
}

// A script runs over no tools at all: an empty registry, or none, is an
// empty tools object, not a sandbox that fails to start.
func TestAScriptRunsOverAnEmptyRegistry(t *testing.T) {
	for name, reg := range map[string]*tool.Registry{"empty": {}, "nil": nil} {
		res := Run(context.Background(), Config{Tools: reg}, Limits{}, `console.log(Object.keys(tools).length); return 1 + 1`)
		if res.IsError || res.Data != "0\n2" {
			t.Errorf("%s registry: %+v", name, res)
		}
	}
}

func TestANameThatIsNoToolsThrowsAnErrorNamingTheTools(t *testing.T) {
	r := newRig(t, Limits{})
	for _, c := range []struct {
		name, code string
		want       []string // in the error's text, in this order
	}{
		{"underscores for dashes", `return await tools.workspace__grep({pattern: "x"})`,
			[]string{`line 1: TypeError: tools has no tool "workspace__grep"; did you mean tools["workspace--grep"](input)?`, "Its tools: ", "test--text", "workspace--read"}},
		{"a camel-cased name", `return await tools.testText({s: "x"})`,
			[]string{`tools has no tool "testText"; did you mean tools["test--text"](input)?`}},
		{"the namespace alone", `return await tools.workspace.read({path: "a"})`,
			[]string{`tools has no tool "workspace"; did you mean tools["workspace--edit"](input) or `, `tools["workspace--read"](input)`}},
		{"a name like none", "\n\nawait tools.nothing_here()",
			[]string{`line 3: TypeError: tools has no tool "nothing_here"; call a tool by its full name: tools["NAME"](input). Its tools: `}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := r.run(c.code)
			if !out.IsError {
				t.Fatalf("not an error: %q", out.Text)
			}
			at := 0
			for _, w := range c.want {
				i := strings.Index(out.Text[at:], w)
				if i < 0 {
					t.Fatalf("the error %q lacks %q (after byte %d)", out.Text, w, at)
				}
				at += i + len(w)
			}
		})
	}
}

func TestWhatJavaScriptAsksOfToolsStaysAsItWas(t *testing.T) {
	r := newRig(t, Limits{})
	for _, c := range []struct{ code, want string }{
		{`return ["nothing_here" in tools, "test--text" in tools]`, `[false,true]`},
		{`return Object.keys(tools).includes("test--text") && !Object.keys(tools).includes("code_execution")`, `true`},
		{`return JSON.stringify(tools)`, `{}`},
		{`return (await tools) === tools`, `true`},
		{`return [tools.then, tools.toJSON, tools.hasOwnProperty, tools[Symbol.iterator]].map(v => typeof v)`, `["undefined","undefined","undefined","undefined"]`},
		{`return typeof tools["test--text"]`, `function`},
		{`console.log(tools); return 1`, "{}\n1"},
		{`return Array.from(tools)`, `[]`},
		// nothing can be added to tools, its prototype included
		{`const p = Object.getPrototypeOf(tools);
try { Object.defineProperty(p, "evil", {value: 1, enumerable: true}) } catch (e) {}
try { tools.evil = 1 } catch (e) {}
const keys = []; for (const k in tools) keys.push(k);
return ["evil" in tools, keys.includes("evil"), Object.isFrozen(p), Object.isFrozen(tools)]`, `[false,false,true,true]`},
	} {
		out, _ := r.run(c.code)
		if out.IsError || out.Text != c.want {
			t.Errorf("%s: got %q (error %v), want %q", c.code, out.Text, out.IsError, c.want)
		}
	}
}
