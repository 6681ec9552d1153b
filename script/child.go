package script

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A script runs in an engine process: the program's own executable,
// started again with engineEnv set, which the init function below turns
// into the engine (serve, script after script) before main runs. The engine cannot
// be stopped from the outside while it runs: it polls its interrupt only
// once every 10,000 function calls and loop jumps, and one of those can take
// milliseconds (a thrown error walks the whole stack to build its trace), so
// a script that catches engine errors in a loop ran many seconds past its
// limit. A process ends at once, whatever the script does, and takes its
// memory with it: the time limit kills it (docs/scripts.md).
const engineEnv = "MYELIN_SCRIPT_ENGINE"

// engineGrace is how long past its time limit an engine process lets
// itself live when nothing kills it (myelin died before it could): it then
// exits by itself.
const engineGrace = 2 * time.Second

func init() {
	if os.Getenv(engineEnv) != "1" {
		return
	}
	os.Exit(engineMain())
}

// engineMain is the engine process: scripts over stdin and stdout, one
// after the other, until myelin closes stdin or kills it. Whatever else
// prints goes to stderr, which myelin keeps the end of.
func engineMain() int {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := newOutbox(os.Stdout)
	os.Stdout = os.Stderr
	warmUp()
	if err := out.send(msg{Op: opReady}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		// Between scripts, an engine that nothing ends (myelin lost track
		// of it) ends itself past the longest a pool keeps one idle.
		idle := time.AfterFunc(MaxIdle+engineGrace, func() {
			fmt.Fprintf(os.Stderr, "the engine waited for a script longer than %v and ended itself\n", MaxIdle)
			os.Exit(3)
		})
		var limit *time.Timer
		err := serve(in, out, func(d time.Duration) {
			idle.Stop()
			limit = time.AfterFunc(d+engineGrace, func() {
				fmt.Fprintf(os.Stderr, "the engine outlived its time limit of %v and ended itself\n", d)
				os.Exit(3)
			})
		})
		idle.Stop()
		if limit != nil {
			limit.Stop()
		}
		switch {
		case errors.Is(err, errNoScript):
			return 0
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// warmUp runs a script that calls a tool, before the engine says it is
// ready: the first script of a process pays for the engine's code read in
// from the executable and for the heap grown to its size (15–20 ms, ten
// times a script's start), and an engine started ahead pays it then, not
// while a script waits.
func warmUp() {
	var in bytes.Buffer
	_ = writeMsg(&in, msg{Op: opRun, N: [4]int64{DefaultMemory, DefaultStack, 10_000, DefaultOutput}, S: [3]string{`console.log(1); await tools.t({}); return {a: [1]}`, `["t"]`}})
	_ = writeMsg(&in, msg{Op: opSettle, S: [3]string{"ok", `{"b":2}`}})
	out := newOutbox(io.Discard)
	defer out.stop()
	_ = serve(&in, out, nil)
}

// errScriptOver is what sendFor says of a message for a script that is
// over.
var errScriptOver = errors.New("the script is over")

// liveEngines counts the engine processes started and not yet reaped: 0
// whenever no script runs and no pool keeps one (pool.go).
var liveEngines atomic.Int32

// conn is myelin's side of one engine: messages both ways, and the means
// to end it.
type conn struct {
	mu sync.Mutex // one writer at a time: the run, and the calls settling
	w  *bufio.Writer
	// queued counts the senders that are in sendFor: the one that
	// brings it to 0 writes what the others put (sendFor).
	queued atomic.Int32
	r      io.Reader
	// script numbers the engine's scripts: a message for another script
	// than the one running is not sent (sendFor). Under mu.
	script int
	pid    int
	// kill ends the engine at once; safe to call twice.
	kill func()
	// wait returns once the engine is gone, with how it ended and the end
	// of what it wrote to stderr when it did not exit 0 (read only when the
	// engine went away before the script ended: else it is Run's kill).
	wait func() string
	// gone is closed once the process has exited, before it is reaped
	// (exited; nil where that is not watched).
	gone <-chan struct{}
}

func (c *conn) send(m msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeMsg(c.w, m)
}

// begin starts the engine's next script: it returns its number, for
// sendFor.
func (c *conn) begin() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.script++
	return c.script
}

// over ends script n: nothing more is sent for it. A kept engine then
// waits for its next script, and a tool call of the last one that settles
// late must not reach that one.
func (c *conn) over(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.script == n {
		c.script++
	}
}

// sendFor sends m when script n is the one running, and drops it
// otherwise. Messages sent together cross in one write (a group commit):
// one that finds another sender queued behind it leaves the write to
// that one, and the last of a queue writes them all, so the results of
// calls that settle while a write is under way reach the engine in one
// write, not one each. No message waits for anything but a sender
// already queued. A message left to the next sender gets nil: a failed
// write is its sender's error (the results of calls, sent so, are
// dropped once the script is over anyway).
func (c *conn) sendFor(n int, m msg) error {
	c.queued.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.script != n {
		err = errScriptOver
	} else {
		err = putMsg(c.w, m)
	}
	if c.queued.Add(-1) > 0 && err == nil {
		return nil // the sender queued behind writes it
	}
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// sendNow is sendFor for a message whose sender must hear how its write
// went (the script itself, read): it is written and flushed by its own
// sender, with whatever others left to be flushed before it, never left
// to a sender queued behind it, whose failed write would then be the
// only one to know.
func (c *conn) sendNow(n int, m msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.script != n {
		return errScriptOver
	}
	return writeMsg(c.w, m)
}

// startEngine starts an engine process, and returns once it is ready.
var startEngine = func() (*conn, error) {
	c, err := launchEngine()
	if err != nil {
		return nil, err
	}
	if err := c.ready(); err != nil {
		return nil, err
	}
	return c, nil
}

// launchEngine starts an engine process, which may not be ready yet
// (conn.ready).
func launchEngine() (*conn, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	// The engine reads nothing from its environment: it gets none of
	// myelin's (API keys included).
	cmd.Env = []string{engineEnv + "=1"}
	cmd.SysProcAttr = engineProcAttr()
	stderr := &tail{max: 4 << 10}
	cmd.Stderr = stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	liveEngines.Add(1)
	var once sync.Once
	var said string
	gone := exited(cmd.Process.Pid)
	return &conn{
		w:    bufio.NewWriterSize(w, 64<<10),
		r:    bufio.NewReaderSize(r, 64<<10),
		pid:  cmd.Process.Pid,
		kill: func() { _ = cmd.Process.Kill() },
		wait: func() string {
			once.Do(func() {
				err := cmd.Wait()
				liveEngines.Add(-1)
				if err != nil {
					said = strings.TrimSuffix(strings.TrimSpace(fmt.Sprintf("%v: %s", err, stderr.String())), ":")
				}
				if gone != nil {
					<-gone // its watcher is over too once the engine is reaped
				}
			})
			return said
		},
		gone: gone,
	}, nil
}

// engineStartLimit bounds how long an engine may take to say it is ready
// (conn.ready); one that takes longer (a blocked init, a stalled read of
// the executable) is ended, and its slot freed. A start takes tens of
// milliseconds.
var engineStartLimit = 30 * time.Second

// ready waits for the engine to say it is ready: once its runtime and
// package inits ran, so that a script that takes an engine started ahead
// does not wait for them. An engine that is not ready, or not within
// engineStartLimit, is ended.
func (c *conn) ready() error {
	late := false
	var mu sync.Mutex
	timer := time.AfterFunc(engineStartLimit, func() {
		mu.Lock()
		late = true
		mu.Unlock()
		c.kill()
	})
	m, err := readMsg(c.r)
	if err == nil && m.Op == opReady && timer.Stop() {
		return nil
	}
	timer.Stop()
	c.kill()
	said := c.wait()
	mu.Lock()
	if late {
		err = fmt.Errorf("it did not say it was ready within %v", engineStartLimit)
	}
	mu.Unlock()
	if err == nil {
		err = fmt.Errorf("its first message is op %q", m.Op)
	}
	return fmt.Errorf("the engine did not start: %w (%s)", err, said)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
