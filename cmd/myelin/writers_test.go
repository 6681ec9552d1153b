package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// lines collects a process's stderr and says when a line holding a
// string has come.
type lines struct {
	mu   sync.Mutex
	all  strings.Builder
	seen chan struct{}
	want string
}

func watch(t *testing.T, r io.Reader, want string) *lines {
	l := &lines{seen: make(chan struct{}), want: want}
	go func() {
		sc := bufio.NewScanner(r)
		found := false
		for sc.Scan() {
			l.mu.Lock()
			l.all.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
			if !found && strings.Contains(sc.Text(), want) {
				found = true
				close(l.seen)
			}
		}
	}()
	return l
}

func (l *lines) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.all.String() }

// waitFor waits for a condition a process brings about, failing after a
// generous deadline (the condition, not the time, is what is tested) with
// what the process wrote to logs, if given.
func waitFor(t *testing.T, what string, cond func() bool, logs ...fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			msg := ""
			for _, l := range logs {
				msg += "; its stderr: " + l.String()
			}
			t.Fatalf("waited 30 s for %s%s", what, msg)
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// Two processes on one conversation (issue 9 §5): while the first runs a
// slow shell call, a second is refused with the holder named; with --wait
// it waits, then runs its turn after the first; the history stays valid.
func TestTwoProcessesOnOneConversationTakeTurns(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_slow", Name: "shell--run",
			Input: `{"command":"touch started; while [ ! -f go ]; do sleep 0.05; done; echo slow done"}`}}},
		providertest.Step{Text: "first done"},
		providertest.Step{Text: "second done"})
	first := exec.Command(bin, "run", "--allow-shell", "--yes", "--workspace", dir, "--conversation", "X", "first")
	first.Env = os.Environ()
	var firstErr strings.Builder
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	waitFor(t, "the first process's slow call", func() bool { return exists(filepath.Join(dir, "started")) })

	_, errOut, code := cli(t, "run", "--workspace", dir, "--conversation", "X", "too soon")
	want := fmt.Sprintf("myelin: conversation X is being advanced by another writer: pid %d on ", first.Process.Pid)
	if code != exitError || !strings.Contains(errOut, want) || !strings.Contains(errOut, ", since ") || !strings.Contains(errOut, "give --wait to wait") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}

	second := exec.Command(bin, "run", "--wait", "--workspace", dir, "--conversation", "X", "after you")
	second.Env = os.Environ()
	pipe, err := second.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var secondOut strings.Builder
	second.Stdout = &secondOut
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	defer second.Process.Kill()
	l := watch(t, pipe, "myelin: waiting for conversation X: another writer is advancing it (pid ")
	select {
	case <-l.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("the second process does not say it waits: %q", l.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first: %v, %s", err, firstErr.String())
	}
	if err := second.Wait(); err != nil || secondOut.String() != "second done\n" {
		t.Fatalf("second: %v, stdout %q, stderr %q", err, secondOut.String(), l.String())
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests", n)
	}
	out, _, code := cli(t, "history", "show", "--json", "X", "--workspace", dir)
	var msgs []history.Message
	if err := json.Unmarshal([]byte(out), &msgs); err != nil || code != 0 {
		t.Fatalf("history %q: %v", out, err)
	}
	var got []string
	for _, m := range msgs {
		desc := string(m.Role)
		for _, p := range m.Parts {
			desc += " " + string(p.Type) + ":" + p.CallID + strings.TrimSpace(p.Text)
		}
		got = append(got, desc)
	}
	if strings.Join(got, " | ") != "user text:first | assistant tool_call:toolu_slow | user tool_result:toolu_slowslow done | assistant text:first done | user text:after you | assistant text:second done" {
		t.Fatalf("history:\n%s", strings.Join(got, "\n"))
	}
}
