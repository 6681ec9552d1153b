package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"modernc.org/quickjs"
)

// engine is the engine process's side of one script (child.go): the VM,
// the bridge the prelude captures, and the loop that runs the script's jobs
// and waits for its tool calls. It keeps no limit but the engine's own
// (memory, stack) and a soft time limit: myelin, on the other side of the
// pipe, counts the output and the calls and ends the process when a limit
// is hit.
type engine struct {
	vm       *quickjs.VM
	out      *outbox
	deadline time.Time
	memory   int64
	output   int // the output limit: past it, prints are not sent
	sent     int
	cut      bool
	inflight int
	finished bool
	threw    bool // the script's body threw
	entered  bool // the script's promise settled and done or failed began
	settleFn quickjs.Value
	werr     error
}

// serve runs the next script, that the opRun message on in carries, and
// writes its prints, calls, finish and end to out. It returns when the
// script has ended (after writing opEnd), errNoScript when myelin closed
// in instead of sending one, or an error when myelin's side of the pipe is
// gone. started, when set, gets the script's time limit
// before it starts.
func serve(in io.Reader, out *outbox, started func(time.Duration)) error {
	m, err := nextScript(in)
	if err != nil {
		return err
	}
	// Said before anything of the script runs: an engine that went away
	// before saying it never ran it, and myelin may run it elsewhere.
	if err := out.send(msg{Op: opTaken}); err != nil {
		return err
	}
	limit := time.Duration(m.N[2]) * time.Millisecond
	if started != nil {
		started(limit)
	}
	e := &engine{out: out, deadline: time.Now().Add(limit - selfStop(limit)), memory: m.N[0], output: int(m.N[3])}
	vm, err := quickjs.NewVM()
	if err != nil {
		return e.end(endError, fmt.Errorf("starting the script engine: %w", err))
	}
	defer vm.Close()
	e.vm = vm
	vm.SetMemoryLimit(uintptr(m.N[0]))
	vm.SetMaxStackSize(uintptr(m.N[1]))
	defer func() {
		if e.settleFn.VM() != nil {
			e.settleFn.Free()
		}
	}()
	if err := e.start(m.S[0], m.S[1], m.S[2] == "background"); err != nil {
		return e.end(endError, err)
	}
	for {
		e.arm()
		if _, err := e.vm.ExecutePendingJobs(); err != nil {
			return e.end(endError, err)
		}
		switch {
		case e.werr != nil:
			return e.werr
		case e.finished:
			return e.end(endDone, nil)
		case e.inflight == 0 && (e.entered || e.threw):
			return e.end(endUnread, nil)
		case e.inflight == 0 && e.outOfMemory():
			return e.end(endNoMemory, nil)
		case e.inflight == 0:
			return e.end(endUnsettled, nil)
		}
		// Read only while waiting: myelin's calls wait to hand over their
		// results while the script runs, and nothing else does. What the
		// script sent since the last wait crosses now, in one write, with
		// the number of calls the engine waits for: when that is one,
		// myelin knows nothing more comes until it settles. A wait with
		// nothing sent since the last (the next of calls started
		// together settles) writes nothing.
		if e.werr = out.wait(msg{Op: opWait, N: [4]int64{int64(e.inflight)}}); e.werr != nil {
			return e.werr
		}
		m, err := readMsg(in)
		if err != nil {
			return fmt.Errorf("waiting for a tool call's result: %w", err)
		}
		if m.Op != opSettle {
			return fmt.Errorf("op %q while the script runs", m.Op)
		}
		e.inflight--
		e.arm()
		if _, err := e.settle(m); err != nil {
			return e.end(endError, err)
		}
	}
}

// settle hands a call's result to the script (prelude.js's settle): a
// plain text result, the most common, as its ticket and text alone.
func (e *engine) settle(m msg) (any, error) {
	if !m.Flag && m.S[1] == "" {
		return e.settleFn.Call(quickjs.UndefinedValue, int(m.N[0]), m.S[0])
	}
	return e.settleFn.Call(quickjs.UndefinedValue, int(m.N[0]), m.S[0], m.Flag, m.S[1])
}

// errNoScript is serve's end when myelin closed the pipe between scripts
// (wrapped with the read's io.EOF): the engine is done.
var errNoScript = errors.New("no more scripts")

// nextScript reads up to the next script. The results of the last
// script's tool calls that myelin sent before it saw that script end are
// dropped: nothing waits for them.
func nextScript(in io.Reader) (msg, error) {
	for {
		m, err := readMsg(in)
		switch {
		case errors.Is(err, io.EOF):
			return m, fmt.Errorf("%w: reading the next script: %w", errNoScript, err)
		case err != nil:
			return m, fmt.Errorf("reading the script: %w", err)
		case m.Op == opSettle:
			continue
		case m.Op != opRun:
			return m, fmt.Errorf("the first message is op %q, not a script", m.Op)
		}
		return m, nil
	}
}

// outOfMemory reports whether the engine is out of memory: whether a
// sixteenth of its limit (1 MiB at least) can still be had. A script whose
// promise ended while the engine had no memory left can lose the job that
// would have ended it: it then looks like one waiting for nothing.
func (e *engine) outOfMemory() bool {
	e.arm()
	_, err := e.vm.Eval(fmt.Sprintf("void new ArrayBuffer(%d)", max(e.memory/16, 1<<20)), quickjs.EvalGlobal)
	return err != nil
}

// arm gives the engine what is left of its wall time: a soft limit, as
// the engine checks it only now and then, ending selfStop before the
// script's limit. myelin ends the process at the limit itself.
func (e *engine) arm() {
	e.vm.SetEvalTimeout(max(time.Until(e.deadline), time.Millisecond))
}

// selfStop is how long before a script's time limit the engine ends a
// script that runs on, by its soft limit (arm): the script then ends as
// any script does, what it printed crossing with its end, before myelin's
// kill comes at the limit. Left to the kill, the prints the engine's
// buffer held (outbox) were lost whenever the kill came before the
// buffer's timer ran: a loaded machine may not run the timer's goroutine
// while the script's loop holds a core. A twentieth of the limit, 100 ms
// at most.
func selfStop(limit time.Duration) time.Duration {
	return min(limit/20, 100*time.Millisecond)
}

// send buffers m (outbox): it crosses when the engine waits or ends, or
// within flushDelay.
func (e *engine) send(m msg) {
	if e.werr == nil {
		e.werr = e.out.put(m)
	}
}

// end tells myelin how the script ended: kind, the engine's error with
// its line when there is one, and the memory the process holds now, by
// which myelin decides whether to keep it for another script.
func (e *engine) end(kind string, err error) error {
	m := msg{Op: opEnd, S: [3]string{kind}, N: [4]int64{1: residentBytes()}}
	if err != nil {
		m.S[1], m.N[0] = err.Error(), int64(lineOf(err))
	}
	if e.werr == nil {
		e.werr = e.out.send(m)
	}
	return e.werr
}

// start installs the bridge and runs the script up to its first await. A
// background script's prelude offers wake_agent and sleep.
func (e *engine) start(code, names string, background bool) error {
	for name, f := range map[string]any{
		"__myelin_print":   e.print,
		"__myelin_call":    e.call,
		"__myelin_finish":  e.finish,
		"__myelin_entered": func() { e.entered = true },
		"__myelin_threw":   func() { e.threw = true },
	} {
		if err := e.vm.RegisterFunc(name, f, false); err != nil {
			return fmt.Errorf("setting up the sandbox: %w", err)
		}
	}
	if !json.Valid([]byte(names)) {
		return fmt.Errorf("setting up the sandbox: the tool names are not JSON: %.100q", names)
	}
	// The prelude's errors are flattened (%v), not wrapped: a line number
	// in them is the prelude's, and end would give it as the script's.
	e.arm()
	if _, err := e.vm.Eval("const __myelin = "+prelude+"("+names+", "+fmt.Sprint(background)+");", quickjs.EvalGlobal); err != nil {
		return fmt.Errorf("setting up the sandbox: %v", err)
	}
	e.arm()
	fn, err := e.vm.EvalValue("__myelin.settle", quickjs.EvalGlobal)
	if err != nil {
		return fmt.Errorf("setting up the sandbox: %v", err)
	}
	e.settleFn = fn
	// On the script's first line, so that the engine's line numbers are
	// the script's.
	e.arm()
	_, err = e.vm.Eval("(async function () { try {"+code+"\n} catch (e) { __myelin.threw(); throw e } })().then(__myelin.done, __myelin.failed);", quickjs.EvalGlobal)
	return err
}

// room cuts text to what myelin needs to see of it: past the output limit
// by one byte, so that it knows the limit was passed and where to cut.
func (e *engine) room(text string) string {
	if room := max(e.output-e.sent, 0); len(text) > room {
		return text[:room+1]
	}
	return text
}

// print is console.log's way out. Past the output limit nothing more is
// sent, and the engine is interrupted: myelin stops the script there.
func (e *engine) print(text string) {
	if e.cut {
		return
	}
	if t := e.room(text); len(t) < len(text) {
		text, e.cut = t, true
		e.vm.Interrupt()
	}
	e.sent += len(text)
	e.send(msg{Op: opPrint, S: [3]string{text}})
}

// call asks myelin to run a tool; the result comes back as an opSettle.
func (e *engine) call(ticket int, name, input string) {
	e.inflight++
	e.send(msg{Op: opCall, N: [4]int64{int64(ticket)}, S: [3]string{name, input}})
}

// finish is how the script's promise ends: kind says what the text is
// (prelude.js). The text counts toward the output limit, whatever it is.
func (e *engine) finish(kind, text string, line int) {
	e.finished = true
	full := len(text)
	e.send(msg{Op: opFinish, N: [4]int64{int64(line), int64(full)}, S: [3]string{kind, e.room(text)}})
}
