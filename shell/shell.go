// Package shell owns shell--run: a command run with `bash -c` in the
// workspace root, its stdout and stderr combined as the program wrote them,
// a non-zero exit or a timeout made an error result.
//
// It must not convert its output into conversation text (package result
// does that) and it is offered only when the host enables it (--allow-shell):
// the command runs with the host's rights, and the workspace confinement of
// package workspace does not apply to it.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/myelin-run/myelin/child"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// Input is the input of shell--run.
type Input struct {
	Command   string `json:"command" jsonschema:"the command, run as bash -c COMMAND in the workspace root"`
	TimeoutMS *int   `json:"timeout_ms,omitempty" jsonschema:"kill the command after this many milliseconds (default 120000)"`
}

// DefaultTimeout is how long a command may run when the call sets no
// timeout_ms.
const DefaultTimeout = 120 * time.Second

// Tool returns shell--run, running commands in dir.
func Tool(dir string) *tool.Tool {
	return tool.MustFunc("shell--run",
		"Run a shell command (bash -c) in the workspace root.\n"+
			"The result is its stdout and stderr together, as the program wrote them. "+
			"A non-zero exit makes the result an error ending in a line `[exit status N]`; "+
			"a command still running at its timeout (timeout_ms, default 120000) is killed with its whole process group.",
		func(ctx context.Context, in Input) (any, error) { return Run(ctx, dir, in) })
}

// Run runs one command. Its output goes straight to a temporary file, not
// through memory, however much it writes while it runs; the file is read
// back when the command ends and removed.
func Run(ctx context.Context, dir string, in Input) (result.Result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return result.Result{}, errors.New("command is empty")
	}
	timeout := DefaultTimeout
	if in.TimeoutMS != nil {
		if *in.TimeoutMS < 1 {
			return result.Result{}, fmt.Errorf("timeout_ms must be 1 or more, got %d", *in.TimeoutMS)
		}
		timeout = time.Duration(*in.TimeoutMS) * time.Millisecond
	}
	out, err := os.CreateTemp("", "myelin-shell-*.out")
	if err != nil {
		return result.Result{}, fmt.Errorf("shell--run: making the output file: %v", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()

	cmd := exec.Command("bash", "-c", in.Command)
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own process group, which dies with myelin however myelin stops
	// (package child), and is killed when the command ends.
	group, err := child.Start(cmd)
	if err != nil {
		return result.Result{}, fmt.Errorf("shell--run: starting bash: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	var werr error
	select {
	case werr = <-waited:
	case <-timer.C:
		stopped = fmt.Sprintf("[timed out after %v; the command and its process group were killed]", timeout)
	case <-ctx.Done():
		stopped = fmt.Sprintf("[stopped: %v; the command and its process group were killed]", context.Cause(ctx))
	}
	if stopped != "" {
		group.Kill()
		werr = <-waited
	}
	group.Kill() // what the command left running in its group (`sleep 30 &`) ends with it
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return result.Result{}, fmt.Errorf("shell--run: reading the output back: %v", err)
	}
	data, err := io.ReadAll(out)
	if err != nil {
		return result.Result{}, fmt.Errorf("shell--run: reading the output back: %v", err)
	}
	text := string(data)
	status := ""
	switch {
	case stopped != "":
		status = stopped
	case werr != nil:
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return result.Result{}, fmt.Errorf("shell--run: %v", werr)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("[killed by signal %v]", ws.Signal())
		} else {
			status = fmt.Sprintf("[exit status %d]", ee.ExitCode())
		}
	}
	if status == "" {
		return result.Result{Data: text}, nil
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return result.Result{Data: text + status, IsError: true}, nil
}
