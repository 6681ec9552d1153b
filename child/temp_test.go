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
	if len(made) != 1 || !strings.HasPrefix(made[0], tempPrefix) {
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
	if n := sweepTemps(tmp); n != 0 || len(names(t, tmp)) != 1 {
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

// A sweep removes only the empty temp dirs whose maker is gone: not one
// in use (its lock held: here by this process), nor one that is not
// empty, nor a link named like one (nor what it points to), nor one
// named as before locks (no lock tells whether it is in use), nor
// another user's, nor anything else in the directory.
func TestASweepRemovesOnlyTheEmptyTempDirsOfMakersGone(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	sweepDue(dir, time.Now()) // taken: makeTemp's own would race this one
	inUse, err := makeTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer inUse.remove()
	if name := filepath.Base(inUse.path); !strings.HasPrefix(name, tempPrefix+strconv.Itoa(os.Getpid())+"-") || !sweepable(name) || inUse.lock == nil {
		t.Fatalf("makeTemp made %s (locked: %v), want it named after this process, as a sweep takes, and locked", inUse.path, inUse.lock != nil)
	}
	mkdir := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := mkdir(tempPrefix + "1-2")
	goneToo := mkdir(tempPrefix + "99999999-12345")
	notEmpty := mkdir(tempPrefix + "3-4")
	if err := os.WriteFile(filepath.Join(notEmpty, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target := mkdir("target")
	link := filepath.Join(dir, tempPrefix+"5-6")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	unlocked := mkdir(tempPrefix + "1234567")
	other := mkdir(tempPrefix + "7x-8")
	kept := []string{notEmpty, target, link, unlocked, other, inUse.path}
	if os.Geteuid() == 0 {
		theirs := mkdir(tempPrefix + "9-10")
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, theirs)
	}

	if n := sweepTemps(dir); n != 2 {
		t.Errorf("sweepTemps removed %d dirs, want 2", n)
	}
	for _, p := range []string{gone, goneToo} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, empty and no maker's, was kept (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(filepath.Join(notEmpty, "f")); err != nil {
		t.Errorf("the file in the dir that was not empty: %v", err)
	}

	inUse.remove()
	if _, err := os.Lstat(inUse.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove kept %s (%v)", inUse.path, err)
	}
}

// A temp dir a sweep removed between its making and its lock is made
// again: the command gets one that is there and locked.
func TestATempDirSweptBeforeItWasLockedIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	sweepDue(dir, time.Now()) // taken: only the hook sweeps
	var taken []string
	afterMkdir = func(made string) {
		if len(taken) == 0 {
			taken = append(taken, made)
			sweepTemps(dir)
		}
	}
	defer func() { afterMkdir = nil }()
	tmp, err := makeTemp()
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.remove()
	if len(taken) != 1 {
		t.Fatal("the hook swept nothing")
	}
	if _, err := os.Lstat(taken[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sweep kept %s, just made and not locked yet (%v)", taken[0], err)
	}
	if tmp.path == taken[0] || tmp.lock == nil {
		t.Fatalf("makeTemp gave %s (locked: %v), want another dir, locked", tmp.path, tmp.lock != nil)
	}
	if _, err := os.Stat(tmp.path); err != nil {
		t.Fatalf("the temp dir made again: %v", err)
	}
	if n := sweepTemps(dir); n != 0 {
		t.Errorf("a sweep removed %d dirs with the temp dir made again locked, want 0", n)
	}
}

// A process sweeps a directory at its first temp dir there, then again
// only once sweepEvery has passed since.
func TestADirectoryIsSweptAtFirstThenOnlyOnceSweepEveryHasPassed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {0, false}, {sweepEvery - time.Second, false}, {sweepEvery, true}, {sweepEvery + time.Second, false}} {
		if got := sweepDue(dir, now.Add(step.at)); got != step.want {
			t.Errorf("sweepDue at +%v = %v, want %v", step.at, got, step.want)
		}
	}
	if !sweepDue(filepath.Join(dir, "other"), now) {
		t.Error("another directory was not due at its first temp dir")
	}
}
