package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// startChat starts the binary's chat with args, its stdin a pipe and
// what it writes read as it runs; it is killed when the test ends.
func startChat(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout, stderr *lockedBuffer) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"chat"}, args...)...)
	cmd.Env = os.Environ()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdin, stdout, stderr
}

// exitCode waits for cmd and is its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the process did not end within 30 s")
	}
	return -1
}

// storedMessages are the messages of the workspace's one conversation.
func storedMessages(t *testing.T, dir string) []history.Message {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	convs, err := store.List(context.Background())
	if err != nil || len(convs) != 1 {
		t.Fatalf("%d conversations (%v), want 1", len(convs), err)
	}
	msgs, err := store.Messages(context.Background(), convs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// Issue 27 §6: Ctrl-C during a chat turn ended the whole session
// ("myelin: context canceled", exit 1). It ends the turn only — its answer
// stored as far as it came, marked as cut — and chat reads the next line;
// Ctrl-C at the prompt ends chat, with the status of a program SIGINT
// ended.
func TestCtrlCInAChatTurnEndsTheTurnAndAtThePromptEndsChat(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	srv := fakeAnthropic(t, providertest.Step{Text: "never sent", Hold: hold}, providertest.Step{Text: "two"})
	cmd, stdin, stdout, stderr := startChat(t, bin, "--workspace", dir)
	if _, err := stdin.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first request", func() bool { return len(srv.Requests()) == 1 }, stderr)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turn to end", func() bool { return strings.Contains(stderr.String(), "Ctrl-C again at the prompt ends chat") }, stderr)
	if _, err := stdin.Write([]byte("second\n")); err != nil {
		t.Fatalf("chat ended with the turn: %v; stderr:\n%s", err, stderr.String())
	}
	waitFor(t, "the second answer", func() bool { return strings.Contains(stdout.String(), "two\n") }, stderr)
	waitFor(t, "the second turn's end", func() bool { return strings.Count(stderr.String(), "tokens:") == 1 }, stderr)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != exitInterrupted {
		t.Fatalf("Ctrl-C at the prompt: exit %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
	}
	msgs := storedMessages(t, dir)
	if len(msgs) != 4 || !msgs[1].Cut || msgs[3].Parts[0].Text != "two" {
		t.Fatalf("stored %d messages: %+v; want the prompt, the cut answer, the second prompt and its answer", len(msgs), msgs)
	}
	if strings.Contains(stderr.String(), "context canceled") {
		t.Fatalf("stderr says %q:\n%s", "context canceled", stderr.String())
	}
}
