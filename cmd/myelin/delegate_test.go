package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 17 §3, end to end through the built binary: one round of three
// agent--delegate calls runs three subagents, each a conversation of its
// own linked to its call. One reads a file with its own tool round and
// answers; one fails (its provider refuses) and its call's result is an
// error naming its conversation; one answers with a report longer than the
// inline cap, which reaches the parent spilled to a file like any result.
// `history show` names each child under its call, and a child's says whose
// it is; `history list` marks them; the parent's turn ends normally.
func TestRunDelegatesThreeSubagentsInOneRoundOneOfWhichFails(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, map[string]string{"notes.txt": "the release is on Friday\n"})
	report := strings.Repeat("a line of the long report\n", 100)
	srv := fakeAnthropic(t)
	var parentSteps = []providertest.Step{
		{Text: "Delegating.", ToolCalls: []providertest.ToolCall{
			{ID: "toolu_a", Name: "agent--delegate", Input: `{"task":"TASK-A: what does notes.txt say?","tools":["workspace--read"]}`},
			{ID: "toolu_b", Name: "agent--delegate", Input: `{"task":"TASK-B: this one fails"}`},
			{ID: "toolu_c", Name: "agent--delegate", Input: `{"task":"TASK-C: write the long report"}`},
		}},
		{Text: "All three came back."},
	}
	var parent atomic.Int32 // the fake answers on a goroutine a request, the subagents' at once
	srv.Respond = func(r providertest.Request) providertest.Step {
		body := string(r.Body)
		if !strings.Contains(body, "You are a subagent") {
			return parentSteps[min(int(parent.Add(1)), len(parentSteps))-1]
		}
		first := r.Messages[0].(map[string]any)
		task, _ := json.Marshal(first["content"])
		switch {
		case bytes.Contains(task, []byte("TASK-A")) && len(r.Messages) == 1:
			return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_a1", Name: "workspace--read", Input: `{"path":"notes.txt"}`}}}
		case bytes.Contains(task, []byte("TASK-A")):
			return providertest.Step{Text: "notes.txt says the release is on Friday."}
		case bytes.Contains(task, []byte("TASK-B")):
			return providertest.Step{Status: 400, ErrorMessage: "this subagent's request is refused"}
		}
		return providertest.Step{Text: report}
	}
	srv.Ready() // the requests come from the built binary
	cmd := exec.Command(bin, "run", "--workspace", dir, "--delegate", "--allow", "agent--delegate", "--inline-cap", "1000", "--no-code-execution", "look into three things")
	cmd.Env = os.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.HasSuffix(stdout.String(), "All three came back.\n") {
		t.Fatalf("stdout %q", stdout.String())
	}
	id := regexp.MustCompile(`conversation (\S+)`).FindStringSubmatch(stderr.String())[1]
	if n := strings.Count(stderr.String(), "myelin: subagent "); n < 5 { // three started, two answered
		t.Errorf("stderr names the subagents %d times; want their starts and answers:\n%s", n, stderr.String())
	}

	show, errOut, code := myelinRun(t, bin, "history", "show", "--workspace", dir, id)
	if code != 0 {
		t.Fatalf("history show: exit %d: %s", code, errOut)
	}
	kids := map[string]string{} // call id → child conversation
	for _, m := range regexp.MustCompile(`\[tool call (toolu_\w)\] agent--delegate [^\n]*\n\[subagent: conversation (\S+);`).FindAllStringSubmatch(show, -1) {
		kids[m[1]] = m[2]
	}
	if len(kids) != 3 {
		t.Fatalf("history show names %d subagents under their calls; want 3:\n%s", len(kids), show)
	}
	results := resultsIn(show)
	if got := results["toolu_a"]; got != "notes.txt says the release is on Friday." {
		t.Errorf("toolu_a's result %q", got)
	}
	if got := results["toolu_b error"]; !strings.Contains(got, "the subagent failed") || !strings.Contains(got, "this subagent's request is refused") || !strings.Contains(got, kids["toolu_b"]) {
		t.Errorf("toolu_b's result %q; want an error saying what failed, naming %s", got, kids["toolu_b"])
	}
	spilled := ""
	for k, v := range results {
		if strings.HasPrefix(k, "toolu_c, whole result in ") {
			spilled = strings.TrimPrefix(k, "toolu_c, whole result in ")
			if !strings.HasPrefix(v, "a line of the long report\n") {
				t.Errorf("toolu_c's head %q", v)
			}
		}
	}
	if whole, err := os.ReadFile(dir + "/" + spilled); spilled == "" || err != nil || string(whole) != report {
		t.Errorf("toolu_c's report spilled to %q: %d bytes, %v; want the whole report", spilled, len(whole), err)
	}

	for call, child := range kids {
		out, errOut, code := myelinRun(t, bin, "history", "show", "--workspace", dir, child)
		if code != 0 || !strings.HasPrefix(out, "subagent of conversation "+id+", started by its call "+call+"\n") {
			t.Errorf("history show %s: exit %d, %s\n%s", child, code, errOut, out)
		}
	}
	if out, _, _ := myelinRun(t, bin, "history", "show", "--workspace", dir, kids["toolu_a"]); !strings.Contains(out, "[tool result toolu_a1]\n     1\tthe release is on Friday\n") {
		t.Errorf("the first subagent's own round is not in its conversation:\n%s", out)
	}
	list, _, _ := myelinRun(t, bin, "history", "list", "--workspace", dir)
	if n := strings.Count(list, "(subagent of "+id+")"); n != 3 {
		t.Errorf("history list marks %d subagents of %s; want 3:\n%s", n, id, list)
	}
}

// resultsIn is the tool results history show printed, by their header's
// words after "tool result " (the call id, then ", error" or where it
// spilled), each its text up to the next header.
func resultsIn(show string) map[string]string {
	out := map[string]string{}
	parts := regexp.MustCompile(`(?m)^\[tool result ([^\]]+)\]\n`).FindAllStringSubmatchIndex(show, -1)
	for i, p := range parts {
		end := len(show)
		if i+1 < len(parts) {
			end = parts[i+1][0]
		}
		if j := strings.Index(show[p[1]:end], "\n── "); j >= 0 {
			end = p[1] + j
		}
		text := strings.TrimSuffix(show[p[1]:end], "\n")
		if j := strings.LastIndex(text, "\n[permission: "); j >= 0 && !strings.Contains(text[j+1:], "\n") {
			text = text[:j] // the next result's decision, printed over it
		}
		out[show[p[2]:p[3]]] = text
	}
	return out
}

// A subagent limit that is not positive, or past its most, is a usage
// error naming the flag.
func TestDelegateLimitsThatAreNotPositiveAreUsageErrors(t *testing.T) {
	for _, tc := range [][]string{
		{"--delegate-rounds", "0"}, {"--delegate-tokens", "-1"}, {"--delegate-time", "0s"}, {"--delegate-depth", "0"},
		{"--delegate-running", "0"}, {"--delegate-running", "1001"},
	} {
		_, errOut, code := cli(t, append([]string{"run", "--workspace", t.TempDir(), "--delegate"}, append(tc, "hi")...)...)
		if code != 2 || !strings.Contains(errOut, tc[0]+" "+tc[1]) {
			t.Errorf("%v: exit %d, %q; want a usage error naming the flag", tc, code, errOut)
		}
	}
}

// --continue goes on with the most recent conversation the user started,
// never a subagent's, which is its parent's to continue.
func TestContinuePassesOverSubagentsConversations(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t)
	srv.Respond = func(r providertest.Request) providertest.Step {
		if bytes.Contains(r.Body, []byte("You are a subagent")) {
			return providertest.Step{Text: "child done"}
		}
		if len(r.Messages) == 1 {
			return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "agent--delegate", Input: `{"task":"t"}`}}}
		}
		return providertest.Step{Text: "parent done"}
	}
	_, errOut, code := cli(t, "run", "--workspace", dir, "--delegate", "--allow", "agent--delegate", "first")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := regexp.MustCompile(`conversation (\S+)`).FindStringSubmatch(errOut)[1]
	// a subagent's conversation updated after its parent's: a process
	// that stopped while the subagent ran leaves it so
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Create(ctx, history.Conversation{ID: "late-child", Parent: first, ParentCall: "toolu_9"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Append(ctx, "late-child", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "t"}}}); err != nil {
		t.Fatal(err)
	}
	if list, err := store.List(ctx); err != nil || list[0].ID != "late-child" {
		t.Fatalf("the most recent conversation: %+v, %v", list, err)
	}
	store.Close()
	_, errOut, code = cli(t, "run", "--workspace", dir, "--continue", "again")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := regexp.MustCompile(`conversation (\S+)`).FindStringSubmatch(errOut)[1]; got != first {
		t.Fatalf("--continue went on with %s; want the parent %s", got, first)
	}
}

// tool call and tool describe, which run no conversation, say where
// agent--delegate is offered.
func TestToolCallSaysWhereAgentDelegateIsOffered(t *testing.T) {
	_, errOut, code := cli(t, "tool", "call", "agent--delegate", `{"task":"t"}`, "--workspace", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "agent--delegate is offered only in a conversation, with --delegate") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

// Killed with SIGKILL while one subagent had answered and another still
// ran, myelin recovers both sides as contract §7 says: the next run keeps
// the first call's result (the child's answer), and the second call, run
// again, finds its child, recovers it, and answers that it was interrupted,
// naming it; no child is started again.
func TestAfterSIGKILLDuringSubagentsTheParentKeepsOneAnswerAndNamesTheInterruptedChild(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv := fakeAnthropic(t)
	var mu sync.Mutex
	var parent int
	childRequests := map[string]int{}
	srv.Respond = func(r providertest.Request) providertest.Step {
		mu.Lock()
		defer mu.Unlock()
		if !bytes.Contains(r.Body, []byte("You are a subagent")) {
			parent++
			if parent == 1 {
				return providertest.Step{ToolCalls: []providertest.ToolCall{
					{ID: "toolu_quick", Name: "agent--delegate", Input: `{"task":"QUICK"}`},
					{ID: "toolu_slow", Name: "agent--delegate", Input: `{"task":"SLOW"}`}}}
			}
			return providertest.Step{Text: "back"}
		}
		if bytes.Contains(r.Body, []byte("QUICK")) {
			childRequests["QUICK"]++
			return providertest.Step{Text: "quick answer"}
		}
		childRequests["SLOW"]++
		return providertest.Step{Hold: hold, Text: "never sent"}
	}
	srv.Ready() // the requests come from the built binary
	cmd, stderr, store := startMyelin(t, bin, dir, "run", "--delegate", "--allow", "agent--delegate", "--workspace", dir, "two subagents")
	ctx := context.Background()
	var parentID string
	waitFor(t, "the quick child's kept answer while the slow one waits", func() bool {
		mu.Lock()
		slow := childRequests["SLOW"]
		mu.Unlock()
		list, _ := store.List(ctx)
		for _, c := range list {
			if c.Parent == "" {
				parentID = c.ID
			}
		}
		kept, _ := store.Kept(ctx, parentID)
		return slow == 1 && len(kept) == 1
	}, stderr)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	kids, err := history.Children(ctx, store, parentID)
	if err != nil || len(kids) != 2 {
		t.Fatalf("children %+v, %v", kids, err)
	}
	slowChild := kids[0].ID
	if kids[0].ParentCall != "toolu_slow" {
		slowChild = kids[1].ID
	}

	out, errOut, code := cli(t, "run", "--delegate", "--allow", "agent--delegate", "--continue", "--workspace", dir, "are you back?")
	if code != 0 || out != "back\n" || !strings.Contains(errOut, "1 tool call(s) had finished and keep their own results; ran 1 tool call(s) again") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	res := map[string]history.Part{}
	msgs, _ := store.Messages(ctx, parentID)
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart {
				res[p.CallID] = p
			}
		}
	}
	if q := res["toolu_quick"]; q.IsError || q.Text != "quick answer" {
		t.Errorf("the quick call's result %+v", q)
	}
	if s := res["toolu_slow"]; !s.IsError || !strings.Contains(s.Text, "stopped before its final answer, and it was not continued") || !strings.Contains(s.Text, slowChild) {
		t.Errorf("the slow call's result %+v; want it interrupted, naming %s", s, slowChild)
	}
	mu.Lock()
	defer mu.Unlock()
	if childRequests["QUICK"] != 1 || childRequests["SLOW"] != 1 {
		t.Errorf("children's requests %v; want one each: none started again", childRequests)
	}
	if kids, _ := history.Children(ctx, store, parentID); len(kids) != 2 {
		t.Errorf("%d children after the recovery; want the two", len(kids))
	}
}

// The process's bounds on engines and background scripts are usage errors
// out of their ranges, on run and serve alike: a total of background
// scripts that could hold every engine too.
func TestProcessBoundsOutOfTheirRangesAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--script-engines", "0"}, "--script-engines 0: give 1 to 1024 (default 8)"},
		{[]string{"--script-engines", "1025"}, "--script-engines 1025: give 1 to 1024 (default 8)"},
		{[]string{"--background-scripts-total", "0"}, "--background-scripts-total 0: give 1 or more (default 4)"},
		{[]string{"--script-engines", "4"}, "--background-scripts-total 4 is not below --script-engines 4"},
		{[]string{"--background-scripts-total", "8"}, "--background-scripts-total 8 is not below --script-engines 8"},
	} {
		for _, cmd := range []string{"run", "serve"} {
			args := append([]string{cmd, "--workspace", t.TempDir()}, tc.args...)
			if cmd == "run" {
				args = append(args, "hi")
			}
			_, errOut, code := cli(t, args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s %v: exit %d, %q; want a usage error saying %q", cmd, tc.args, code, errOut, tc.want)
			}
		}
	}
}
