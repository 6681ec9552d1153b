// Package shell owns shell--run: a command run with `bash -c` in the
// workspace root, its stdout and stderr combined as the program wrote them,
// a non-zero exit or a timeout made an error result. The output goes to a
// file under the workspace's .myelin/shell/, never through memory, and that
// file is the result (a result.TextFile); the package also owns cleaning
// up the files a dead process left there.
//
// Commands run in myelin's sandbox (package sandbox) unless the policy
// given says Off: they may write only the workspace (less its protected
// paths) and a temp dir of their own, may not read the user's secrets nor
// see the provider keys, and reach no network unless allowed. A command
// that failed and whose output looks like the sandbox stopped it gets a
// line saying so, and how the user may loosen it.
//
// It must not convert its output into conversation text (package result
// does that) and it is offered only when the host enables it
// (--allow-shell); it does not decide whether a command may run at all
// (the permission policy does).
package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/myelin-run/myelin/child"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/sandbox"
	"github.com/myelin-run/myelin/tool"
)

// Input is the input of shell--run.
type Input struct {
	Command   string `json:"command" jsonschema:"the command, run as bash -c COMMAND in the workspace root"`
	TimeoutMS *int   `json:"timeout_ms,omitempty" jsonschema:"kill the command after this many milliseconds: 1 to 3600000 (an hour), larger values are taken as 3600000 (default 120000)"`
}

// Name is the tool's name.
const Name = "shell--run"

// DefaultTimeout is how long a command may run when the call sets no
// timeout_ms.
const DefaultTimeout = 120 * time.Second

// MaxTimeout is the longest timeout_ms a call may set; a larger one is
// taken as it (a huge one overflowed into microseconds). The host's bound
// on a tool call (tool.Dispatcher.Timeout, 120 s by default) applies as
// well: a command is stopped at whichever comes first.
const MaxTimeout = time.Hour

// Tool returns shell--run, running commands in dir, the workspace root,
// in the default sandbox (the zero sandbox.Policy: the workspace writable,
// no network). ToolWithPolicy takes another policy.
func Tool(dir string) *tool.Tool {
	return ToolWithPolicy(dir, sandbox.Policy{})
}

// ToolWithPolicy returns shell--run, running commands in dir, the
// workspace root, confined by p (sandbox.Off: unconfined). Making it is a
// start of myelin for the workspace: it removes the output files that a
// process which ended without converting them (a crash, a kill) left
// under .myelin/shell/, and never one a live process holds.
func ToolWithPolicy(dir string, p sandbox.Policy) *tool.Tool {
	CleanOutputs(dir)
	return tool.MustFunc(Name,
		"Run a shell command (bash -c) in the workspace root.\n"+
			"The result is its stdout and stderr together, as the program wrote them. "+
			"A non-zero exit makes the result an error ending in a line `[exit status N]`; "+
			"a command still running at its timeout (timeout_ms, default 120000, at most 3600000; the host's bound on a tool call also applies) is killed with its whole process group.\n"+
			describe(p),
		func(ctx context.Context, in Input) (any, error) { return RunWithPolicy(ctx, dir, p, in) })
}

// Run runs one command in dir in the default sandbox; see RunWithPolicy.
func Run(ctx context.Context, dir string, in Input) (result.Result, error) {
	return RunWithPolicy(ctx, dir, sandbox.Policy{}, in)
}

// RunWithPolicy runs one command in dir, confined by p. Its output goes straight to a file under
// dir's .myelin/shell/ (see OutputDir), never through memory, however much
// it writes; the status line of a non-zero exit, a signal or a timeout is
// written at the file's end. The result's Data is that file as a
// result.TextFile, which the conversion takes over: it becomes the spill
// file (or the binary payload) as it is, or is read and removed.
func RunWithPolicy(ctx context.Context, dir string, p sandbox.Policy, in Input) (result.Result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return result.Result{}, errors.New("command is empty")
	}
	timeout := DefaultTimeout
	if in.TimeoutMS != nil {
		if *in.TimeoutMS < 1 {
			return result.Result{}, fmt.Errorf("timeout_ms must be 1 or more, got %d", *in.TimeoutMS)
		}
		timeout = time.Duration(min(*in.TimeoutMS, int(MaxTimeout/time.Millisecond))) * time.Millisecond
	}
	out, err := outputFile(dir)
	if err != nil {
		return result.Result{}, fmt.Errorf("shell--run: making the output file: %w", err)
	}
	handed := false // the file is the result's, for the conversion to take over
	defer func() {
		if !handed {
			_ = os.Remove(out.Name())
			_ = out.Close()
		}
	}()

	cmd := exec.Command("bash", "-c", in.Command)
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	if err := p.Apply(cmd, dir); err != nil {
		return result.Result{}, fmt.Errorf("shell--run: %w", err)
	}
	// Its own process group, which dies with myelin however myelin stops
	// (package child), and is killed when the command ends.
	group, err := child.Start(cmd)
	if err != nil {
		return result.Result{}, fmt.Errorf("shell--run: starting bash: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- group.Wait() }() // not cmd.Wait: it notices a supervisor the command stopped
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
	status := ""
	switch {
	case stopped != "":
		status = stopped
	case werr != nil:
		var ee *exec.ExitError
		var held *child.HeldError
		if errors.As(werr, &held) {
			status = "[" + held.Error() + "]"
			break
		}
		if !errors.As(werr, &ee) {
			return result.Result{}, fmt.Errorf("shell--run: %w", werr)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("[killed by signal %v]", ws.Signal())
		} else {
			status = fmt.Sprintf("[exit status %d]", ee.ExitCode())
		}
	}
	failed := status != ""
	if status != "" && stopped == "" && p.Mode != sandbox.Off && mayBeSandbox(out) {
		status += "\n" + note(p)
	}
	if names := withheld(p, os.Environ(), in.Command); len(names) > 0 {
		status = strings.TrimPrefix(status+"\n"+withheldNote(names), "\n")
	}
	if status != "" {
		if err := appendStatus(out, status); err != nil {
			return result.Result{}, fmt.Errorf("shell--run: writing the exit status after the output: %w", err)
		}
	}
	handed = true
	// A result nobody converts (the dispatcher gave up on the call as it
	// finished) must not leave its file until the next start: once the
	// file is unreachable, its name is removed. After a conversion the name
	// is gone already (moved or removed), and the remove does nothing.
	runtime.AddCleanup(out, func(name string) { _ = os.Remove(name) }, out.Name())
	return result.Result{Data: result.TextFile{Path: out.Name(), File: out}, IsError: failed}, nil
}

// appendStatus writes the status line at the end of the output, on a line
// of its own.
func appendStatus(out *os.File, status string) error {
	st, err := out.Stat()
	if err != nil {
		return err
	}
	line := status
	if size := st.Size(); size > 0 {
		var last [1]byte
		if _, err := out.ReadAt(last[:], size-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			line = "\n" + status
		}
	}
	_, err = out.WriteAt([]byte(line), st.Size())
	return err
}
