package shell

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/sandbox"
)

// testPolicy is the sandbox the tests that are not about it run commands
// in: the default where this machine has one, Off where it has none
// (macOS, a kernel without Landlock), so that they still test the rest.
var testPolicy = func() sandbox.Policy {
	if err := (sandbox.Policy{}).Apply(exec.Command("true"), os.TempDir()); errors.Is(err, sandbox.ErrUnavailable) {
		return sandbox.Policy{Mode: sandbox.Off}
	}
	return sandbox.Policy{}
}()

func run(t *testing.T, dir, command string, timeoutMS int) (string, bool) {
	t.Helper()
	in := Input{Command: command}
	if timeoutMS > 0 {
		in.TimeoutMS = &timeoutMS
	}
	r, err := RunWithPolicy(context.Background(), dir, testPolicy, in)
	if err != nil {
		return err.Error(), true
	}
	out := text(t, r)
	return out.Text, out.IsError
}

// text is what the conversion makes of a result, with no cap to speak of
// and no workspace to spill into.
func text(t *testing.T, r result.Result) result.Output {
	t.Helper()
	return result.One(result.Call{ID: "c", Result: r, Cap: 1 << 30}, result.Env{Limits: result.Limits{Round: 1 << 30}})
}

func TestOutputIsStdoutAndStderrAsWritten(t *testing.T) {
	text, isErr := run(t, t.TempDir(), `echo out1; echo err1 >&2; echo out2; printf 'tab\t"q"\n' >&2`, 0)
	if text != "out1\nerr1\nout2\ntab\t\"q\"\n" || isErr {
		t.Fatalf("text = %q, error %v", text, isErr)
	}
}

func TestRunsInTheWorkspaceRoot(t *testing.T) {
	dir := t.TempDir()
	text, _ := run(t, dir, "pwd", 0)
	want, _ := filepath.EvalSymlinks(dir)
	if strings.TrimSpace(text) != want {
		t.Fatalf("pwd = %q, want %q", text, want)
	}
}

func TestNonZeroExitIsAnErrorEndingInItsStatus(t *testing.T) {
	text, isErr := run(t, t.TempDir(), "printf 'partial'; exit 3", 0)
	if text != "partial\n[exit status 3]" || !isErr {
		t.Fatalf("text = %q, error %v", text, isErr)
	}
	text, isErr = run(t, t.TempDir(), "exit 1", 0)
	if text != "[exit status 1]" || !isErr {
		t.Fatalf("text = %q", text)
	}
}

func TestTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	// 2 s: time under load to write the pid and say "started" first
	text, isErr := run(t, dir, "sleep 30 & echo $! > child.pid; echo started; wait", 2000)
	if !isErr || !strings.Contains(text, "started\n[timed out after 2s; the command and its process group were killed]") {
		t.Fatalf("text = %q", text)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the call waited for the child")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the background child %d is still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancelKillsTheCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r, err := RunWithPolicy(ctx, t.TempDir(), testPolicy, Input{Command: "sleep 30"})
	if err != nil || !r.IsError || !strings.Contains(text(t, r).Text, "killed") {
		t.Fatalf("got %+v, %v", r, err)
	}
}

func TestBadInput(t *testing.T) {
	if text, isErr := run(t, t.TempDir(), "  ", 0); !isErr || !strings.Contains(text, "command is empty") {
		t.Fatalf("text = %q", text)
	}
	zero := 0
	if _, err := RunWithPolicy(context.Background(), t.TempDir(), testPolicy, Input{Command: "true", TimeoutMS: &zero}); err == nil || !strings.Contains(err.Error(), "timeout_ms must be 1 or more") {
		t.Fatalf("err = %v", err)
	}
}

func TestLargeOutputComesBackWhole(t *testing.T) {
	text, isErr := run(t, t.TempDir(), "seq 1 200000", 0)
	if isErr || strings.Count(text, "\n") != 200000 || !strings.HasSuffix(text, "199999\n200000\n") {
		t.Fatalf("got %d lines", strings.Count(text, "\n"))
	}
}

func TestALoneSurrogateIsOneReplacementCharacterNotBinary(t *testing.T) {
	r, err := RunWithPolicy(context.Background(), t.TempDir(), testPolicy, Input{Command: `printf 'x\355\240\200y'`})
	if err != nil {
		t.Fatal(err)
	}
	out := result.One(result.Call{ID: "c", Result: r}, result.Env{})
	if out.Text != "x\uFFFDy" || out.IsError {
		t.Fatalf("text = %q, error %v", out.Text, out.IsError)
	}
}

// Issue 10: a huge timeout_ms overflowed (one became 384 µs) and killed the
// command at once. Values above the top are taken as the top.
func TestAHugeTimeoutIsTakenAsTheLongestNotOverflowed(t *testing.T) {
	for _, ms := range []int{math.MaxInt, min(18446744073710, math.MaxInt), int(MaxTimeout/time.Millisecond) + 1} {
		r, err := RunWithPolicy(context.Background(), t.TempDir(), testPolicy, Input{Command: "sleep 0.2; echo done", TimeoutMS: &ms})
		if err != nil {
			t.Fatalf("timeout_ms %d: %v", ms, err)
		}
		if out := text(t, r); out.IsError || out.Text != "done\n" {
			t.Fatalf("timeout_ms %d: %q", ms, out.Text)
		}
	}
}
