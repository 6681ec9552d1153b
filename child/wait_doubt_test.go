//go:build linux

package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/skipped"
)

// A command whose main thread ended on its own (pthread_exit) while
// another thread of it runs shows its pid as a zombie ('Z') in
// /proc/PID/stat. It has not ended: when it stops its supervisor, Wait
// continues it and waits for the command's real end (its last file
// written, exit status 4), as for any running command. (Wait took the
// zombie leader for the command's end, and killed it with everything
// below the supervisor.) The command is a C program: the test needs gcc,
// which CI installs.
func TestWaitLeavesACommandWhoseMainThreadExitedRunning(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no gcc on PATH; .ci/run installs it")
		}
		skipped.Need(t, "gcc", "apt-get install gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lead.c")
	if err := os.WriteFile(src, []byte(`#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
#include <fcntl.h>
static void touch(const char *p){int fd=open(p,O_CREAT|O_WRONLY,0644); if(fd>=0) close(fd);}
static void *run(void *a){ touch("started"); usleep(100000); kill(getppid(), SIGSTOP); usleep(500000); touch("last"); exit(4); }
int main(){ pthread_t t; pthread_create(&t,0,run,0); pthread_exit(0); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lead")
	if out, err := exec.Command("gcc", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v %s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill()
	wantExit(t, waitEnded(t, g, cmd), 4)
	if !exists(filepath.Join(dir, "last")) {
		t.Fatal("Wait killed the command (its main thread had exited, another ran) before it wrote its last file")
	}
}

// commandEnded, for a zombie whose /proc/PID/status says no more than
// the error reading it: gone (ENOENT, ESRCH) is ended, anything else
// (EMFILE, EACCES) is not known, so not ended.
func TestCommandEndedTakesOnlyGoneForEnded(t *testing.T) {
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	for errno, want := range map[syscall.Errno]bool{syscall.ENOENT: true, syscall.ESRCH: true, syscall.EMFILE: false, syscall.EACCES: false} {
		readProc = func(name string) ([]byte, error) {
			if strings.HasSuffix(name, "/stat") {
				return []byte("7 (a) Z) Z 5 7 7 0"), nil
			}
			return nil, &os.PathError{Op: "read", Path: name, Err: errno}
		}
		// a pid past any pid_max: no such process, as ENOENT says
		if got := commandEnded(noSuchPid, 5); got != want {
			t.Errorf("commandEnded with /proc/PID/status failing with %v = %v, want %v", errno, got, want)
		}
		readProc = func(name string) ([]byte, error) { return nil, &os.PathError{Op: "open", Path: name, Err: errno} }
		if got := commandEnded(noSuchPid, 5); got != want {
			t.Errorf("commandEnded with /proc/PID/stat failing with %v = %v, want %v", errno, got, want)
		}
	}
}

// Wait's 10 s (killWait) count runs only while the supervisor stays
// stopped: one found stopped after the command's end (here taken for
// ended though it runs: /proc made to show a lone zombie, and nothing
// below killed, as a doubt would) and running again once continued is
// waited for — the command writes its last file and exits 4 more than
// killWait later. (The count ran on while the supervisor ran, and Wait
// killed it and the command at its end, with a HeldError.)
func TestWaitCountsOnlyWhileTheSupervisorStaysStopped(t *testing.T) {
	defer func(k time.Duration) { killWait = k }(killWait)
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	defer func(k func(int)) { killBelow = k }(killBelow)
	killWait = 300 * time.Millisecond
	g, cmd, dir := startScript(t, `echo > started; while [ ! -e go ]; do sleep 0.01; done; kill -STOP $PPID; sleep 1; echo > last; exit 4`)
	defer g.Kill()
	command := "/proc/" + strconv.Itoa(g.pid) + "/"
	sup := strconv.Itoa(cmd.Process.Pid)
	readProc = func(name string) ([]byte, error) {
		switch name {
		case command + "stat":
			return []byte(strconv.Itoa(g.pid) + " (bash) Z " + sup + " 1 1 0"), nil
		case command + "status":
			return []byte("Name:\tbash\nThreads:\t1\n"), nil
		}
		return os.ReadFile(name)
	}
	killBelow = func(int) {}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, waitEnded(t, g, cmd), 4)
	if !exists(filepath.Join(dir, "last")) {
		t.Fatal("Wait returned before the command wrote its last file")
	}
}

// noSuchPid is past the largest pid_max Linux allows (4,194,304): no
// process has it.
const noSuchPid = 1<<22 + 7

// A running process /proc hides (hidepid=2 shows a process this one may
// not trace, a non-dumpable one of the same user among them, as ENOENT)
// is not taken for ended: Wait would kill a running command.
func TestARunningProcessProcHidesIsNotTakenForEnded(t *testing.T) {
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	readProc = func(name string) ([]byte, error) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	if commandEnded(os.Getpid(), 1) {
		t.Error("a process that exists, its /proc entry hidden (ENOENT), was taken for ended")
	}
}

// killTree, the supervisor stopped (it reaps none of the processes it
// kills), takes a killed process that /proc hides (hidepid=2: ENOENT,
// faked here) and that has ended, a zombie, for exited: it does not wait
// out killTreeFor for it (kill(pid, 0) alone says a zombie exists).
func TestKillTreeDoesNotWaitOutTheZombiesProcHides(t *testing.T) {
	defer func(r func(string) ([]byte, error)) { readProc = r }(readProc)
	g, cmd, _ := startScript(t, `sleep 30 & sleep 30 & echo > started; wait`)
	defer func() { _ = g.Wait() }()
	defer g.Kill()
	sup := cmd.Process.Pid
	_ = syscall.Kill(sup, syscall.SIGSTOP)
	for i := 0; !stopped(sup); i++ {
		if i > 500 {
			t.Fatal("supervisor not stopped")
		}
		time.Sleep(time.Millisecond)
	}
	defer syscall.Kill(sup, syscall.SIGCONT)
	readProc = func(name string) ([]byte, error) {
		if strings.HasPrefix(name, "/proc/") {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
		}
		return os.ReadFile(name)
	}
	start := time.Now()
	killTree(sup)
	if took := time.Since(start); took >= killTreeFor {
		t.Errorf("killTree took %v with the killed processes zombies /proc hides: it waited out killTreeFor (%v)", took, killTreeFor)
	}
}
