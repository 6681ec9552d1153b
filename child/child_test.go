//go:build linux

package child

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/myelin-run/myelin/internal/skipped"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary, re-executed with envParent set to a scenario's name,
// is the parent process: it starts children as the scenario says, writes
// their pids into the directory envDir names, writes "ready" there, and
// waits to be killed.
const (
	envParent = "MYELIN_CHILD_TEST_PARENT"
	envDir    = "MYELIN_CHILD_TEST_DIR"
)

// A scenario sets up children in the parent; the test then SIGKILLs the
// parent and expects every pid the scenario wrote to be gone.
var scenarios = map[string]func(dir string) error{
	// A child and the grandchild it started in the background.
	"child and grandchild": func(dir string) error {
		_, err := startBash(dir, `sleep 300 & echo $! > grandchild; echo $$ > child; wait`)
		return err
	},
	// The goroutine that started the child was locked to its thread and
	// returned without unlocking it, so the runtime ended that thread. A
	// parent-death signal tied to that thread would kill the child now; the
	// child must live on until the parent itself dies.
	"started from a thread that exited": func(dir string) error {
		tid := make(chan int)
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			tid <- syscall.Gettid()
			_, err := startBash(dir, `echo $$ > child; exec sleep 300`)
			errc <- err
		}()
		t := <-tid
		if err := <-errc; err != nil {
			return err
		}
		for alive(os.Getpid(), t) {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	},
	// A grandchild that left the group and the session (setsid), and one
	// that did so from a subshell that exited at once (a double fork: its
	// parent is gone, and it is nobody's child in the group): neither the
	// group's kill nor a parent-death signal reaches them (issue 26 §7).
	"a grandchild that called setsid": func(dir string) error {
		_, err := startBash(dir, `setsid bash -c 'echo $$ > grandchild; exec sleep 300' & echo $$ > child; wait`)
		return err
	},
	"a double fork with setsid": func(dir string) error {
		_, err := startBash(dir, `(setsid bash -c 'echo $$ > grandchild; exec sleep 300' &) & echo $$ > child; exec sleep 300`)
		return err
	},
	// The group got SIGTERM, which its processes ignore: the watcher must
	// ignore it too and still kill them when the parent dies.
	"after a polite SIGTERM": func(dir string) error {
		g, err := startBash(dir, `trap '' TERM; sleep 300 & echo $! > grandchild; echo $$ > child; wait`)
		if err != nil {
			return err
		}
		return g.Signal(syscall.SIGTERM)
	},
}

// startBash starts `bash -c script` in dir and waits for the pid files it
// writes.
func startBash(dir, script string) (*Group, error) {
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	g, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	go cmd.Wait()
	for _, name := range pidNames(script) {
		for {
			if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil && strings.HasSuffix(string(data), "\n") {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return g, nil
}

func pidNames(script string) []string {
	var names []string
	for _, n := range []string{"child", "grandchild"} {
		if strings.Contains(script, "> "+n+";") {
			names = append(names, n)
		}
	}
	return names
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envParent); name != "" {
		// The main thread is never ended (the runtime parks it instead):
		// keep it here, so that a goroutine that locks a thread gets another.
		runtime.LockOSThread()
		dir := os.Getenv(envDir)
		if err := scenarios[name](dir); err != nil {
			fmt.Fprintln(os.Stderr, "parent:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, "ready"), []byte("ready\n"), 0o644); err != nil {
			os.Exit(1)
		}
		select {} // until the test kills it
	}
	os.Exit(skipped.Main(m))
}

func TestChildrenDieWhenTheirParentIsSIGKILLed(t *testing.T) {
	for name := range scenarios {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			parent := exec.Command(os.Args[0], "-test.run=^$")
			parent.Env = append(os.Environ(), envParent+"="+name, envDir+"="+dir)
			var stderr strings.Builder
			parent.Stderr = &stderr
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			defer parent.Process.Kill()
			waitFor(t, func() bool { return exists(filepath.Join(dir, "ready")) }, "the parent to be ready", &stderr)
			pids := readPids(t, dir)
			for name, pid := range pids {
				if !alive(pid, pid) {
					t.Fatalf("the %s %d died before its parent did", name, pid)
				}
			}
			if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			parent.Wait()
			for name, pid := range pids {
				waitFor(t, func() bool { return !alive(pid, pid) }, fmt.Sprintf("the %s %d to die", name, pid), &stderr)
			}
		})
	}
}

// What the child left running ends by the time Kill returns after the
// child exited: in its group, or out of it (setsid, a double fork).
func TestKillEndsWhatTheChildLeftRunning(t *testing.T) {
	for name, script := range map[string]string{
		"in its group":          `sleep 300 & echo $! > grandchild`,
		"after setsid":          `setsid bash -c 'echo $$ > grandchild; exec sleep 300' & until [ -s grandchild ]; do sleep 0.01; done`,
		"double fork, setsid":   `(setsid bash -c 'echo $$ > grandchild; exec sleep 300' &) & until [ -s grandchild ]; do sleep 0.01; done`,
		"double fork, in group": `(sleep 300 & echo $! > grandchild) & wait`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = dir
			g, err := Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			pid := readPids(t, dir)["grandchild"]
			g.Kill()
			if alive(pid, pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the grandchild %d (%s) outlived Kill", pid, script)
			}
			g.Kill() // a second Kill does nothing
			if err := g.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("Signal after Kill: %v", err)
			}
		})
	}
}

func TestStartRefusesWhatWouldLeaveTheGroupOrCannotStart(t *testing.T) {
	tests := []struct {
		name string
		cmd  func() *exec.Cmd
		want string
	}{
		{"a session of its own", func() *exec.Cmd {
			c := exec.Command("true")
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			return c
		}, "asks for a session or terminal of its own"},
		{"a command that does not exist", func() *exec.Cmd {
			return exec.Command("/nonexistent/command")
		}, "/nonexistent/command"},
		{"a directory that does not exist", func() *exec.Cmd {
			c := exec.Command("true")
			c.Dir = "/nonexistent/dir"
			return c
		}, "/nonexistent/dir"},
		{"a command started already", func() *exec.Cmd {
			c := exec.Command("true")
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			return c
		}, "was already started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Start(tt.cmd())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start: %v, want an error holding %q", err, tt.want)
			}
			if g != nil {
				t.Error("a Group came with the error")
			}
			if kids := children(t); len(kids) > 0 {
				t.Errorf("left processes behind: %v", kids)
			}
		})
	}
}

// The command's SysProcAttr keeps its other fields, which apply to the
// supervisor and so to the command; the supervisor gets a group of its own
// and no parent-death signal (it must outlive myelin to kill what is left).
func TestStartKeepsTheCommandsOwnAttributes(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{GidMappingsEnableSetgroups: true}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill()
	cmd.Wait()
	a := cmd.SysProcAttr
	if !a.GidMappingsEnableSetgroups {
		t.Error("GidMappingsEnableSetgroups was not kept")
	}
	if !a.Setpgid || a.Pgid != 0 {
		t.Errorf("Setpgid %v, Pgid %d: want a group of its own (Setpgid, Pgid 0)", a.Setpgid, a.Pgid)
	}
	if a.Pdeathsig != 0 {
		t.Errorf("Pdeathsig %v: want none (the supervisor must outlive myelin)", a.Pdeathsig)
	}
}

func readPids(t *testing.T, dir string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, name := range []string{"child", "grandchild"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %q: %v", name, data, err)
		}
		pids[name] = pid
	}
	if len(pids) == 0 {
		t.Fatal("no pids were written")
	}
	return pids
}

// alive says whether thread tid of process pid runs (a zombie, dead but
// not reaped by whoever inherited it, is not alive).
func alive(pid, tid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return false
	}
	s := string(data)
	// the state follows the command name, which is in parentheses
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// children are this process's live child processes.
func children(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var kids []string
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(data)) {
			if pid, _ := strconv.Atoi(p); alive(pid, pid) {
				kids = append(kids, p)
			}
		}
	}
	return kids
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// waitFor waits for cond, which a correct implementation makes true at
// once or nearly; the bound only keeps a broken one from hanging the test.
func waitFor(t *testing.T, cond func() bool, what string, stderr *strings.Builder) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if stderr != nil {
				msg = stderr.String()
			}
			t.Fatalf("gave up waiting for %s %s", what, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Wait says how the command ended, as if myelin had started it itself:
// its exit status, or the signal that killed it (the supervisor between
// them ends the same way).
func TestWaitSaysHowTheCommandEnded(t *testing.T) {
	tests := []struct {
		script string
		signal os.Signal // sent with Signal once the command runs
		code   int       // the exit code, or -1 when killed by sig
		sig    syscall.Signal
	}{
		{`exit 0`, nil, 0, 0},
		{`exit 7`, nil, 7, 0},
		{`kill -TERM $$`, nil, -1, syscall.SIGTERM},
		{`kill -SEGV $$`, nil, -1, syscall.SIGSEGV},
		{`kill -KILL $$`, nil, -1, syscall.SIGKILL},
		{`echo > started; exec sleep 300`, syscall.SIGTERM, -1, syscall.SIGTERM},
		{`trap 'exit 42' USR1; echo > started; while :; do sleep 0.01; done`, syscall.SIGUSR1, 42, 0},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("bash", "-c", tt.script)
			cmd.Dir = dir
			g, err := Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Kill()
			if tt.signal != nil {
				waitFor(t, func() bool { return exists(filepath.Join(dir, "started")) }, "the command to start", nil)
				if err := g.Signal(tt.signal); err != nil {
					t.Fatal(err)
				}
			}
			err = g.Wait()
			var ws syscall.WaitStatus
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				ws = ee.Sys().(syscall.WaitStatus)
			default:
				t.Fatalf("Wait: %v", err)
			}
			if tt.code >= 0 && (!ws.Exited() || ws.ExitStatus() != tt.code) {
				t.Errorf("ended with %v (status %#x), want exit status %d", err, ws, tt.code)
			}
			if tt.code < 0 && (!ws.Signaled() || ws.Signal() != tt.sig || ws.CoreDump()) {
				t.Errorf("ended with %v (status %#x), want killed by %v without a core dump", err, ws, tt.sig)
			}
		})
	}
}

// A command that stops its supervisor (SIGSTOP to its parent) does not
// make Kill hang, nor leave what it started. It stops it at once, which
// now and then is before the supervisor said the command started: Start
// then continues it (a CI run under load waited for ever there, before
// Start did; stopped_test.go makes that case happen every time).
func TestKillEndsEverythingWhenTheCommandStoppedItsSupervisor(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", `sleep 300 & echo $! > grandchild; kill -STOP $PPID; echo > stopped; exec sleep 300`)
	cmd.Dir = dir
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	waitFor(t, func() bool { return exists(filepath.Join(dir, "stopped")) }, "the supervisor to be stopped", nil)
	pid := readPids(t, dir)["grandchild"]
	g.Kill()
	if alive(pid, pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the grandchild %d outlived Kill of a stopped supervisor", pid)
	}
}

// The supervisor's variable never reaches the command, even when the
// command's own environment named it.
func TestTheCommandGetsItsOwnEnvironment(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", `echo "${MYELIN_CHILD_SUPERVISOR-unset} $MINE" > env`)
	cmd.Dir = dir
	cmd.Env = []string{"MYELIN_CHILD_SUPERVISOR=9", "MINE=kept", "PATH=" + os.Getenv("PATH")}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	g.Kill()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "env")); string(got) != "unset kept\n" {
		t.Errorf("the command saw %q, want %q", got, "unset kept\n")
	}
}

// A supervisor whose first line is neither "ok" nor an error is said with
// what it said, not with a nil cause formatted as an error (%!w(<nil>)).
func TestASupervisorsUnexpectedFirstLineIsQuoted(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ctlR.Close()
	doneR, doneW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	doneW.Close()
	defer doneR.Close()
	g := &Group{cmd: cmd, path: "/bin/x", ctl: ctlW, done: doneR, status: bufio.NewReader(strings.NewReader("garbage\n"))}
	err = g.started()
	want := `child: the supervisor of /bin/x ended before it started it (it said "garbage")`
	if err == nil || err.Error() != want {
		t.Fatalf("started() = %v\nwant %s", err, want)
	}
}
