//go:build unix

package sqlite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// crashChild names the store a re-run of this test binary writes to and
// then dies on (TestLazyCommitsSurviveAKilledProcess).
const crashChild = "MYELIN_HISTORY_CRASH_CHILD"

// A round's lazy commits — the answer asking for calls, a finished call's
// kept result — are not synced, and the connection stays at NORMAL between
// them: killed right after them (SIGKILL, no Close, no checkpoint), the
// process loses neither. The next process finds both, takes the dead
// holder's claim over and appends the round, synced.
func TestLazyCommitsSurviveAKilledProcess(t *testing.T) {
	if path := os.Getenv(crashChild); path != "" {
		lazyWritesThenDie(path)
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	writeAndDie(t, "TestLazyCommitsSurviveAKilledProcess", crashChild, path)
	s := openStore(t, path)
	ctx := context.Background()
	msgs, err := s.Messages(ctx, "c")
	if err != nil || len(msgs) != 2 || msgs[1].Role != history.Assistant || len(msgs[1].ToolCalls()) != 2 {
		t.Fatalf("after the crash: %+v, %v; want the prompt and the lazily stored answer with its 2 calls", msgs, err)
	}
	kept, err := s.Kept(ctx, "c")
	if err != nil || len(kept) != 1 || kept[0].CallID != "a" || kept[0].Text != "kept before the crash" {
		t.Fatalf("kept after the crash: %+v, %v", kept, err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatalf("the dead process's claim was not taken over: %v", err)
	}
	if err := s.Append(history.Writing(ctx, h), "c", history.Message{Role: history.User, Parts: []history.Part{kept[0],
		{Type: history.ToolResultPart, CallID: "b", Text: "interrupted", IsError: true}}}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := s.Kept(ctx, "c"); len(kept) != 0 {
		t.Fatalf("the round's append left %d kept results", len(kept))
	}
}

// lazyWritesThenDie is the child's part: a prompt (synced), the answer
// (lazy) and one kept result (lazy), then SIGKILL.
func lazyWritesThenDie(path string) {
	fail := func(err error) {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	s, err := Open(path)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		fail(err)
	}
	h, err := s.Claim(ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		fail(err)
	}
	w := history.Writing(ctx, h)
	if err := s.Append(w, "c", userText("go")); err != nil {
		fail(err)
	}
	answer := history.Message{Role: history.Assistant, Parts: []history.Part{
		{Type: history.ToolCallPart, CallID: "a", Name: "noop", Input: []byte(`{}`)},
		{Type: history.ToolCallPart, CallID: "b", Name: "noop", Input: []byte(`{}`)}}}
	if err := s.Append(history.Lazy(w), "c", answer); err != nil {
		fail(err)
	}
	if err := s.Keep(history.Lazy(w), "c", history.Part{Type: history.ToolResultPart, CallID: "a", Text: "kept before the crash"}); err != nil {
		fail(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process
}

// bigCrashChild names the store a re-run of this test binary writes a
// large lazy commit to and then dies on
// (TestALargeLazyCommitSurvivesAKilledProcess).
const bigCrashChild = "MYELIN_HISTORY_BIG_CRASH_CHILD"

// A lazy commit larger than SQLite's page cache (it goes to the log in
// several writes, some before the commit) and a small one after
// it are in the log when they return: killed right after them, the
// process loses neither, and the next opening reads both whole.
func TestALargeLazyCommitSurvivesAKilledProcess(t *testing.T) {
	if path := os.Getenv(bigCrashChild); path != "" {
		bigLazyWritesThenDie(path)
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	writeAndDie(t, "TestALargeLazyCommitSurvivesAKilledProcess", bigCrashChild, path)
	msgs, err := openStore(t, path).Messages(context.Background(), "c")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("after the crash: %d messages, %v; want the 2 appended lazily", len(msgs), err)
	}
	if msgs[0].Parts[0].Text != bigText || msgs[1].Parts[0].Text != "after it" {
		t.Fatalf("after the crash the messages are %d and %q bytes; want %d and %q", len(msgs[0].Parts[0].Text), msgs[1].Parts[0].Text, len(bigText), "after it")
	}
}

// bigLazyWritesThenDie is the child's part: a large message and a small
// one appended lazily, then SIGKILL.
func bigLazyWritesThenDie(path string) {
	fail := func(err error) {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	s, err := Open(path)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		fail(err)
	}
	for _, text := range []string{bigText, "after it"} {
		if err := s.Append(history.Lazy(ctx), "c", userText(text)); err != nil {
			fail(err)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process
}

// writeAndDie re-runs this test binary as test name, with env naming the
// store at path, and fails t unless that process died by SIGKILL (as the
// child half of test, which writes and then kills itself, does).
func writeAndDie(t *testing.T, test, env, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the writing process did not die by SIGKILL: %v\n%s", err, out)
	}
}
