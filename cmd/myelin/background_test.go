package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/delegate"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// lastUserText is the text of the last user message of request i.
func lastUserText(t *testing.T, srv *providertest.Server, i int) string {
	t.Helper()
	msgs := srv.Request(i)["messages"].([]any)
	m := msgs[len(msgs)-1].(map[string]any)
	if m["role"] != "user" {
		t.Fatalf("request %d ends with a %v message", i, m["role"])
	}
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if p, ok := p.(map[string]any); ok {
				if s, ok := p["text"].(string); ok {
					b.WriteString(s)
				} else if s, ok := p["content"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	t.Fatalf("request %d: content %T", i, m["content"])
	return ""
}

func toolCallStep(id, name string, input any) providertest.Step {
	raw, _ := json.Marshal(input)
	return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: id, Name: name, Input: string(raw)}}}
}

// Issue 17 §1, end to end through the built binary, driven through chat's
// stdin: a background script wakes the agent twice — each wake a user
// message naming the script, its line, the time since its start, which
// wake of how many and the payload, then a turn — and then dies, which is
// silent as it had woken the agent; code_execution--list says how it
// ended. A second script that dies without waking wakes the agent once.
func TestChatRunsAWokenTurnPerWakeOfABackgroundScriptThatThenDies(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	code := "console.log('building');\nawait wake_agent('first: the build started');\nawait sleep(20);\nawait wake_agent({step: 2, status: 'tests running'});\nawait sleep(20);\nthrow new Error('the build broke')"
	srv := fakeAnthropic(t,
		toolCallStep("toolu_1", "code_execution", map[string]any{"background": true, "code": code}),
		providertest.Step{Text: "watching"},
		providertest.Step{Text: "woken once"},
		providertest.Step{Text: "woken twice"})
	cmd, stdin, stdout, stderr := startChat(t, bin, "--workspace", dir, "--wake-gap", "0s", "--allow", "code_execution")
	io.WriteString(stdin, "watch the build\n")
	var id string
	waitFor(t, "the script to end after two woken turns", func() bool {
		id = regexp.MustCompile(`bg_[0-9a-f]{8}`).FindString(stdout.String() + stderr.String())
		journal, _ := os.ReadFile(filepath.Join(dir, ".myelin", "background", id+".log"))
		return len(srv.Requests()) == 4 && strings.Contains(string(journal), "the script failed")
	}, stderr)

	first, second := lastUserText(t, srv, 2), lastUserText(t, srv, 3)
	head := regexp.MustCompile(`^\[myelin: background script (bg_[0-9a-f]{8}) woke you with wake_agent, from line (\d) of the script, [0-9.]+m?s after it started: wake (\d) of at most 100\. Its journal: \.myelin/background/bg_[0-9a-f]{8}\.log\. Its payload:\]\n`)
	for i, tc := range []struct{ text, line, n, payload string }{{first, "2", "1", "first: the build started"}, {second, "4", "2", `{"status":"tests running","step":2}`}} {
		m := head.FindStringSubmatch(tc.text)
		if m == nil || m[1] != id || m[2] != tc.line || m[3] != tc.n || strings.TrimPrefix(tc.text, m[0]) != tc.payload {
			t.Errorf("wake %d's message:\n%s", i+1, tc.text)
		}
	}
	journal, _ := os.ReadFile(filepath.Join(dir, ".myelin", "background", id+".log"))
	if !regexp.MustCompile(`^building\n\[myelin [0-9TZ:-]+: the script failed: the script failed at line 6: Error: the build broke\]\n$`).Match(journal) {
		t.Errorf("journal:\n%s", journal)
	}
	if !strings.Contains(stderr.String(), "myelin: background script "+id+" woke the agent (wake 1 of 100, line 2, ") {
		t.Errorf("chat did not show the wake: %s", stderr.String())
	}

	srv.Push(toolCallStep("toolu_2", "code_execution--list", map[string]any{}), providertest.Step{Text: "listed"},
		toolCallStep("toolu_3", "code_execution", map[string]any{"background": true, "code": "console.log('oops');\nnull.x"}),
		providertest.Step{Text: "started again"}, providertest.Step{Text: "saw it die"})
	io.WriteString(stdin, "what ran?\n")
	waitFor(t, "the list", func() bool { return len(srv.Requests()) == 6 }, stderr)
	if list := lastUserText(t, srv, 5); !strings.Contains(list, id+" failed (the script failed at line 6: Error: the build broke)") {
		t.Errorf("the list: %s", list)
	}
	io.WriteString(stdin, "again\n")
	waitFor(t, "the death wake's turn", func() bool { return len(srv.Requests()) == 9 }, stderr)
	if died := lastUserText(t, srv, 8); !strings.Contains(died, "after it started without waking you") || !strings.Contains(died, "the script failed at line 2: TypeError") || !strings.HasSuffix(died, "oops\n") {
		t.Errorf("the death wake:\n%s", died)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v; stderr: %s", err, stderr.String())
	}
	if got := stdout.String(); got != "watching\nwoken once\nwoken twice\nlisted\nstarted again\nsaw it die\n" {
		t.Errorf("stdout %q", got)
	}
	if n := len(srv.Requests()); n != 9 {
		t.Errorf("%d requests: a death after wakes is silent, so 9 were wanted", n)
	}
}

// `run` waits for nothing: its background script stops as it ends, and the
// conversation's next turn is told once that the script is gone (issue 17
// §1: after a restart, running scripts are gone).
func TestRunStopsItsBackgroundScriptsAndTheNextTurnIsToldOnce(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t,
		toolCallStep("toolu_1", "code_execution", map[string]any{"background": true, "code": "await sleep(1e9)"}),
		providertest.Step{Text: "started"})
	out, errOut, code := cli(t, "run", "--allow", "code_execution", "--workspace", dir, "watch")
	if code != 0 || out != "started\n" || !strings.Contains(errOut, "myelin: stopping 1 background script(s) as myelin ends") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	id := regexp.MustCompile(`bg_[0-9a-f]{8}`).FindString(lastUserText(t, srv, 1))
	srv.Push(providertest.Step{Text: "ok"}, providertest.Step{Text: "ok again"})
	if _, errOut, code := cli(t, "run", "--continue", "--workspace", dir, "hello"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	told := lastUserText(t, srv, 2)
	if id == "" || !strings.HasPrefix(told, "[myelin: background script "+id+", started ") || !strings.Contains(told, "was running when the myelin process that ran it stopped; it is gone and will not wake you") || !strings.HasSuffix(told, "]\n\nhello") {
		t.Errorf("the next turn's prompt:\n%s", told)
	}
	if _, errOut, code := cli(t, "run", "--continue", "--workspace", dir, "and now?"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if again := lastUserText(t, srv, 3); again != "and now?" {
		t.Errorf("told twice: %q", again)
	}
}

// One process, one bound on engines: the background scripts, the
// scripts of calls and a subagent's code_execution (made again over its
// own tools) all take their engines from the toolset's one Engines, which
// --script-engines sizes.
func TestEveryScriptOfAToolsetSharesItsEngines(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	f := toolsetFlags{script: script.Limits{Time: script.DefaultTime, ToolCalls: script.DefaultToolCalls, Stack: script.DefaultStack},
		scriptMemory: script.DefaultMemory >> 20, scriptOutput: script.DefaultOutput >> 20, scriptEngines: 2,
		background: &backgroundSetup{limits: background.Limits{Total: 1}, wakes: background.NewQueue()},
		delegate:   &delegate.Delegate{}}
	f.mcp.maxReply = 1
	env := result.Env{Store: ws}
	ts, err := openToolset(context.Background(), ws, f, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.close()
	defer ts.bg.Close()
	if ts.engines.Limit() != 2 {
		t.Fatalf("the toolset's engines allow %d, want the 2 of --script-engines", ts.engines.Limit())
	}
	d := &tool.Dispatcher{Tools: ts.reg, Env: env}
	ctx := tool.WithConversation(context.Background(), "c1")
	if out := d.Call(ctx, tool.Call{ID: "c1", Name: script.Name, Input: json.RawMessage(`{"code":"await sleep(3600000)","background":true}`)}); out.IsError {
		t.Fatalf("starting a background script: %s", out.Text)
	}
	if n := ts.engines.Running(); n != 1 {
		t.Fatalf("%d of the toolset's engines taken with a background script running; want 1: its engine", n)
	}
	held := ts.engines.TryTake() // a script of another call holds the last
	if held == nil {
		t.Fatal("no engine left for a script of a call")
	}
	defer held.Free()
	over := f.delegate.Over[script.Name]
	if over == nil {
		t.Fatal("no code_execution made over a subagent's tools")
	}
	child, err := over(&tool.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	res := child.Handler(ctx, json.RawMessage(`{"code":"return 1","timeout_ms":100}`))
	if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "all 2 script engines this process may run at once") {
		t.Errorf("a subagent's script with the toolset's engines all taken: %q (error %v); want it to wait on them and say so", text, res.IsError)
	}
	if out := d.Call(ctx, tool.Call{ID: "c2", Name: script.Name, Input: json.RawMessage(`{"code":"return 1","timeout_ms":100}`)}); !out.IsError || !strings.Contains(out.Text, "all 2 script engines") {
		t.Errorf("a script of a call with the toolset's engines all taken: %q; want it to wait on them and say so", out.Text)
	}
}
