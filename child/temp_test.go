//go:build linux

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

// envSandboxed, set to a workspace, makes the test binary a myelin that
// starts one sandboxed command there (in os.TempDir(), as TMPDIR says),
// writes the supervisor's pid and then "ready" into the workspace, and
// waits to be killed (sandboxedMyelin).
const envSandboxed = "MYELIN_CHILD_TEST_SANDBOXED"

func init() {
	ws := os.Getenv(envSandboxed)
	if ws == "" {
		return
	}
	g, err := sandboxedMyelin(ws)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxed myelin:", err)
		os.Exit(1)
	}
	time.Sleep(time.Hour) // killed long before, unless its test died
	runtime.KeepAlive(g)  // its control pipe, closed, would end the command
	os.Exit(1)
}

// sandboxedMyelin starts a sandboxed command in ws that says its pid and
// sleeps (its temp dir left empty), and writes the supervisor's pid and
// "ready" into ws once it runs.
func sandboxedMyelin(ws string) (*Group, error) {
	cmd := exec.Command("bash", "-c", `echo $$ > command.new && mv command.new command && exec sleep 300`)
	cmd.Dir = ws
	if err := (sandbox.Policy{}).Apply(cmd, ws); err != nil {
		return nil, err
	}
	g, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	for !exists(filepath.Join(ws, "command")) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(ws, "supervisor"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return nil, err
	}
	return g, os.WriteFile(filepath.Join(ws, "ready"), nil, 0o644)
}

// needSandbox skips t where commands cannot be sandboxed.
func needSandbox(t *testing.T) {
	t.Helper()
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	if err := (sandbox.Policy{}).Apply(exec.Command("true"), t.TempDir()); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
}

// runSandboxed runs `bash -c script` sandboxed in ws to its end, its temp
// dir in os.TempDir().
func runSandboxed(t *testing.T, ws, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = ws
	if err := (sandbox.Policy{}).Apply(cmd, ws); err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = g.Wait()
	g.Kill()
	if err != nil {
		t.Fatalf("the sandboxed %q: %v", script, err)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: %q: %v", path, data, err)
	}
	return pid
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	return got
}

// A myelin SIGKILLed while a sandboxed command ran leaves the command's
// temp dir (which a sweep keeps while that myelin runs, even empty): its
// supervisor empties it but cannot remove it. The next sandboxed
// command's start (another myelin's) sweeps it away, by the time that
// command's end has removed its own: nothing is left.
func TestATempDirLeftByAKilledMyelinIsRemovedAtTheNextSandboxedStart(t *testing.T) {
	needSandbox(t)
	root := t.TempDir()
	tmp, ws := filepath.Join(root, "tmp"), filepath.Join(root, "ws")
	for _, d := range []string{tmp, ws} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	myelin := exec.Command(os.Args[0], "-test.run=^$")
	myelin.Env = append(os.Environ(), envSandboxed+"="+ws, "TMPDIR="+tmp)
	var stderr strings.Builder
	myelin.Stderr = &stderr
	if err := myelin.Start(); err != nil {
		t.Fatal(err)
	}
	defer myelin.Process.Kill()
	waitFor(t, func() bool { return exists(filepath.Join(ws, "ready")) }, "the sandboxed command to run", &stderr)
	sup, command := readPid(t, filepath.Join(ws, "supervisor")), readPid(t, filepath.Join(ws, "command"))
	made := names(t, tmp)
	if len(made) != 1 || !strings.HasPrefix(made[0], sandboxTemps.Prefix) {
		t.Fatalf("%s holds %q, want the command's temp dir alone", tmp, made)
	}
	// The lock is myelin's alone: neither the supervisor nor the command
	// holds the directory open (the command could let the lock go).
	for _, pid := range []int{sup, command} {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if target, _ := os.Readlink(fd); strings.Contains(target, made[0]) {
				t.Errorf("process %d holds its temp dir open as %s", pid, fd)
			}
		}
	}
	// In use, empty, by a myelin that runs: a sweep keeps it.
	if n := sandboxTemps.Sweep(tmp); n != 0 || len(names(t, tmp)) != 1 {
		t.Fatalf("a sweep while the command ran removed %d dirs, want its temp dir kept", n)
	}
	left := filepath.Join(tmp, made[0])
	if err := os.WriteFile(filepath.Join(left, "left"), []byte("what a command writes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := myelin.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	myelin.Wait()
	waitFor(t, func() bool { return !alive(sup, sup) && !alive(command, command) }, "the supervisor and the command to end with myelin", nil)
	if got := names(t, left); len(got) != 0 {
		t.Fatalf("the supervisor left %q in the temp dir, want it emptied", got)
	}

	t.Setenv("TMPDIR", tmp)
	runSandboxed(t, ws, `echo "$TMPDIR" > tmpdir`)
	if got := names(t, tmp); len(got) != 0 {
		t.Errorf("after the next sandboxed command %s holds %q, want nothing", tmp, got)
	}
	if ran, _ := os.ReadFile(filepath.Join(ws, "tmpdir")); !strings.Contains(string(ran), tmp) {
		t.Errorf("the next command's TMPDIR was %q, want one in %s", ran, tmp)
	}
}
