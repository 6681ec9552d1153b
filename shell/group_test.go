//go:build unix

package shell

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command that ends, however it ends, takes what it started in the
// background with it: nothing a shell--run call starts outlives the call.
func TestWhatACommandLeftRunningEndsWithTheCall(t *testing.T) {
	tests := []struct {
		name    string
		command string
		timeout int
	}{
		{"the command exits", `sleep 300 & echo $! > bg.pid`, 0},
		{"the command fails", `sleep 300 & echo $! > bg.pid; exit 4`, 0},
		// the timeout leaves the pid time to be written under load (500 ms
		// once did not, in CI, for the setsid case: no bg.pid to read)
		{"the command times out", `sleep 300 & echo $! > bg.pid; sleep 300`, 2000},
		// Out of the group and the session (issue 26 §7).
		{"the command's child called setsid", `setsid bash -c 'echo $$ > bg.pid; exec sleep 300' & ` + untilPid, 0},
		{"a double fork with setsid", `(setsid bash -c 'echo $$ > bg.pid; exec sleep 300' &) & ` + untilPid, 0},
		{"setsid, then the command times out", `setsid bash -c 'echo $$ > bg.pid; exec sleep 300' & ` + untilPid + `; sleep 300`, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.command, "setsid") && runtime.GOOS != "linux" {
				t.Skip("only Linux reaches what left the group (package child)")
			}
			dir := t.TempDir()
			in := Input{Command: tt.command}
			if tt.timeout > 0 {
				in.TimeoutMS = &tt.timeout
			}
			if _, err := RunWithPolicy(context.Background(), dir, testPolicy, in); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "bg.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
			// The group is killed before Run returns; the bound only keeps a
			// broken build from hanging.
			deadline := time.Now().Add(5 * time.Second)
			for running(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the background sleep %d outlived the call", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// untilPid waits for bg.pid, which the process that left the group
// writes once it has.
const untilPid = `until [ -s bg.pid ]; do sleep 0.01; done`

// running says whether pid is a process that has not exited (a zombie
// not yet reaped by whoever inherited it has).
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: ask the kernel
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || (s[i+2] != 'Z' && s[i+2] != 'X')
}
