package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Killed with SIGKILL mid-round, after one call had finished and while
// another still ran, myelin keeps the finished call's real result: on
// restart it is answered with it, and only the unfinished call as
// interrupted (issue 9 §4, contract §7).
func TestAFinishedCallKeepsItsResultAfterSIGKILLMidRound(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_fast", Name: "shell--run", Input: `{"command":"echo fast result"}`},
		{ID: "toolu_slow", Name: "shell--run", Input: `{"command":"echo $$ > pid; sleep 60"}`}}})
	cmd, stderr, store := startMyelin(t, bin, dir, "run", "--allow-shell", "--allow", "echo *", "--allow", "sleep 60", "--workspace", dir, "two calls")
	ctx := context.Background()
	waitFor(t, "the fast call's kept result and the slow call", func() bool {
		list, _ := store.List(ctx)
		if len(list) == 0 || !exists(filepath.Join(dir, "pid")) {
			return false
		}
		kept, _ := store.Kept(ctx, list[0].ID)
		return len(kept) == 1
	}, stderr)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if raw, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			syscall.Kill(-pid, syscall.SIGKILL) // the sleep, if it outlived myelin
		}
	}

	srv.Push(providertest.Step{Text: "back"})
	out, errOut, code := cli(t, "run", "--continue", "--allow-shell", "--allow", "echo *", "--allow", "sleep 60", "--workspace", dir, "are you back?")
	if code != 0 || out != "back\n" || !strings.Contains(errOut, "1 tool call(s) had finished and keep their own results; answered 1 tool call(s) interrupted") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	msgs := srv.Request(1)["messages"].([]any)
	results := msgs[2].(map[string]any)["content"].([]any)
	fast, slow := results[0].(map[string]any), results[1].(map[string]any)
	if fast["tool_use_id"] != "toolu_fast" || fast["is_error"] != nil || !strings.Contains(fast["content"].(string), "fast result") {
		t.Fatalf("the finished call's result: %v", fast)
	}
	if slow["tool_use_id"] != "toolu_slow" || slow["is_error"] != true || !strings.Contains(slow["content"].(string), "interrupted") {
		t.Fatalf("the interrupted call's result: %v", slow)
	}
}

// An answer whose connection drops mid-stream: the user saw its first
// words, and the next run's request carries them as the assistant's
// answer, marked as cut — not two prompts merged (issue 9 §4).
func TestAnAnswerCutMidStreamIsWhatTheNextRunSends(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "Hello there, world.", CutAfter: 3}, providertest.Step{Text: "again"})
	out, errOut, code := cli(t, "run", "--workspace", dir, "hi")
	if code != exitError || out != "Hello the\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := cli(t, "run", "--continue", "--workspace", dir, "go on"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	msgs := srv.Request(1)["messages"].([]any)
	answer := msgs[1].(map[string]any)
	blocks := answer["content"].([]any)
	if len(msgs) != 3 || answer["role"] != "assistant" || len(blocks) != 2 ||
		blocks[0].(map[string]any)["text"] != "Hello the" || !strings.HasPrefix(blocks[1].(map[string]any)["text"].(string), "\n\n[cut off here:") {
		t.Fatalf("the next request: %v", msgs)
	}
}

// startMyelin starts the built binary with args in the background, its
// stderr kept, and opens the history store of its workspace dir, for a
// test to watch it and kill it; the binary is killed and the store closed
// when the test ends.
func startMyelin(t *testing.T, bin, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *sqlite.Store) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return cmd, stderr, store
}
