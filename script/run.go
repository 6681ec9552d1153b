package script

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"modernc.org/quickjs"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// Why a script was stopped: the limit it hit, named in its error result.
const (
	stopTime      = "time"
	stopOutput    = "output"
	stopToolCalls = "tool calls"
	stopCancelled = "cancelled"
)

// Call is one tool call a script made, as its result's structured content
// and the trace record it.
type Call struct {
	Name       string `json:"name"`
	InputBytes int    `json:"inputBytes"`
	IsError    bool   `json:"isError"`
	MS         int64  `json:"ms"`
}

// run is one script on its VM. Only the goroutine in Run touches the VM;
// tool calls run on their own goroutines and come back through done.
type run struct {
	c        Config
	lim      Limits
	vm       *quickjs.VM
	d        *tool.Dispatcher
	id       string // names the spill files of the script's calls
	deadline time.Time

	out      strings.Builder
	cut      bool
	calls    []Call
	inflight int
	done     chan completion
	quit     chan struct{}
	callCtx  context.Context

	settleFn quickjs.Value // __myelin.settle, held for the run

	mu      sync.Mutex
	stopped string // the limit that stopped the script, once one did

	finished bool
	kind     string // how it finished: "undefined", "string", "json" or "error"
	text     string
	line     int
}

type completion struct {
	ticket int
	index  int // in calls
	out    result.Output
	ms     int64
}

// Run runs one script under limits, its tool calls dispatched over
// c.Tools, and returns its result: what it printed, then the value it
// returned; an error result for a thrown error or a limit.
func Run(ctx context.Context, c Config, limits Limits, code string) result.Result {
	lim := limits.withDefaults()
	vm, err := quickjs.NewVM()
	if err != nil {
		return result.Error(fmt.Sprintf("starting the script engine: %v", err))
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(lim.Memory))
	vm.SetMaxStackSize(uintptr(lim.Stack))
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{
		c: c, lim: lim, vm: vm, id: scriptID(), deadline: time.Now().Add(lim.Time),
		done: make(chan completion), quit: make(chan struct{}), callCtx: callCtx,
		d: &tool.Dispatcher{Tools: c.Tools, Timeout: c.Timeout, Env: result.Env{
			Store: c.Env.Store, Now: c.Env.Now,
			// A script gets each result whole, up to its output bound.
			Limits: result.Limits{Agent: lim.Output, Round: lim.Output},
		}},
	}
	defer close(r.quit)
	watched := make(chan struct{})
	defer close(watched)
	go func() { // cancellation from outside: the engine stops at once
		select {
		case <-ctx.Done():
			r.stop(stopCancelled)
		case <-watched:
		}
	}()
	defer func() {
		if r.settleFn.VM() != nil {
			r.settleFn.Free()
		}
	}()
	if err := r.start(code); err != nil {
		return r.result(err)
	}
	return r.result(r.loop(ctx))
}

func scriptID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "script_" + hex.EncodeToString(b)
}

// stop records the limit that stopped the script, the first one only, and
// interrupts the engine: an interrupt is an exception no script can catch.
func (r *run) stop(why string) {
	r.mu.Lock()
	if r.stopped == "" {
		r.stopped = why
	}
	r.mu.Unlock()
	r.vm.Interrupt()
}

func (r *run) stoppedBy() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// arm gives the engine what is left of the wall time.
func (r *run) arm() {
	r.vm.SetEvalTimeout(max(time.Until(r.deadline), time.Millisecond))
}

// start installs the bridge and runs the script up to its first await.
func (r *run) start(code string) error {
	for name, f := range map[string]any{
		"__myelin_print":  r.print,
		"__myelin_call":   r.call,
		"__myelin_finish": r.finish,
	} {
		if err := r.vm.RegisterFunc(name, f, false); err != nil {
			return fmt.Errorf("setting up the sandbox: %v", err)
		}
	}
	list, _ := json.Marshal(names(r.c.Tools))
	r.arm()
	if _, err := r.vm.Eval("const __myelin = "+prelude+"("+string(list)+");", quickjs.EvalGlobal); err != nil {
		return fmt.Errorf("setting up the sandbox: %v", err)
	}
	// On the script's first line, so that the engine's line numbers are
	// the script's.
	r.arm()
	fn, err := r.vm.EvalValue("__myelin.settle", quickjs.EvalGlobal)
	if err != nil {
		return fmt.Errorf("setting up the sandbox: %v", err)
	}
	r.settleFn = fn
	_, err = r.vm.Eval("(async function () {"+code+"\n})().then(__myelin.done, __myelin.failed);", quickjs.EvalGlobal)
	return err
}

// loop runs the script's jobs and settles its tool calls until it
// finishes or is stopped.
func (r *run) loop(ctx context.Context) error {
	timeUp := time.NewTimer(time.Until(r.deadline))
	defer timeUp.Stop()
	for {
		r.arm()
		if _, err := r.vm.ExecutePendingJobs(); err != nil {
			return err
		}
		if r.finished || r.stoppedBy() != "" {
			return nil
		}
		if r.inflight == 0 {
			return errors.New("the script is waiting for a promise that nothing will settle (only tool calls settle by themselves here: there are no timers)")
		}
		select {
		case comp := <-r.done:
			if err := r.settle(comp); err != nil {
				return err
			}
		case <-timeUp.C:
			r.stop(stopTime)
			return nil
		case <-ctx.Done():
			r.stop(stopCancelled)
			return nil
		}
	}
}

// print is console.log's way out.
func (r *run) print(text string) {
	if r.cut {
		return
	}
	if room := r.lim.Output - r.out.Len(); len(text) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		r.out.WriteString(text[:cut])
		r.cut = true
		r.stop(stopOutput)
		return
	}
	r.out.WriteString(text)
}

// call starts a tool call; its result comes back through done.
func (r *run) call(ticket int, name, input string) {
	if len(r.calls) >= r.lim.ToolCalls {
		r.stop(stopToolCalls)
		return
	}
	index := len(r.calls)
	r.calls = append(r.calls, Call{Name: name, InputBytes: len(input)})
	r.inflight++
	go func() {
		t0 := time.Now()
		var out result.Output
		if name == Name {
			out = result.Output{Text: "a script cannot call " + Name, IsError: true}
		} else {
			out = r.d.Call(r.callCtx, tool.Call{ID: fmt.Sprintf("%s-%d", r.id, index+1), Name: name, Input: json.RawMessage(input)})
		}
		select {
		case r.done <- completion{ticket: ticket, index: index, out: out, ms: time.Since(t0).Milliseconds()}:
		case <-r.quit:
		}
	}()
}

// settle hands a finished call's result to the script.
func (r *run) settle(c completion) error {
	r.inflight--
	r.calls[c.index].IsError = c.out.IsError
	r.calls[c.index].MS = c.ms
	if w := r.c.Trace; w != nil {
		fmt.Fprintf(w, "%s %s %s input=%dB ms=%d error=%v\n", time.Now().UTC().Format(time.RFC3339), r.id, r.calls[c.index].Name, r.calls[c.index].InputBytes, c.ms, c.out.IsError)
	}
	r.arm()
	_, err := r.settleFn.Call(quickjs.UndefinedValue, c.ticket, c.out.Text, c.out.IsError, string(c.out.Structured))
	return err
}

// finish is how the script's promise ends. A returned value counts toward
// the output limit with what was printed.
func (r *run) finish(kind, text string, line int) {
	r.finished, r.kind, r.text, r.line = true, kind, text, line
	if kind != "error" && r.out.Len()+len(text) > r.lim.Output {
		r.print(text) // cuts it where the limit falls, and stops the script
	}
}

// result composes the script's result: its output, then its value or
// what stopped it.
func (r *run) result(err error) result.Result {
	output := r.out.String()
	if r.cut {
		output += fmt.Sprintf("\n[output cut at the script's output limit of %s; the rest was not kept]\n", mib(r.lim.Output))
	}
	var value json.RawMessage = []byte("null")
	var tail string
	isError := false
	switch why := r.stoppedBy(); {
	case why != "":
		tail, isError = r.limitText(why), true
	case err != nil:
		tail, isError = r.errorText(err.Error(), lineOf(err)), true
	case !r.finished:
		tail, isError = "the script did not finish", true
	case r.kind == "error":
		tail, isError = r.errorText(r.text, r.line), true
	case r.kind == "string":
		tail = r.text
		value, _ = json.Marshal(r.text)
	case r.kind == "json":
		tail = r.text
		value = json.RawMessage(r.text)
	}
	structured, jerr := result.JSON(struct {
		Output    string          `json:"output"`
		Value     json.RawMessage `json:"value"`
		ToolCalls []Call          `json:"toolCalls"`
	}{output, value, append([]Call{}, r.calls...)})
	if jerr != nil {
		structured = nil
	}
	// A failure is said first, so that it is in the head the model reads
	// even when the output before it spills.
	text := output + tail
	if isError && output != "" {
		text = tail + "\nWhat it printed before:\n" + output
	}
	return result.Result{Data: text, IsError: isError, Structured: structured}
}

func (r *run) limitText(why string) string {
	switch why {
	case stopTime:
		return fmt.Sprintf("the script was stopped at its time limit of %v", r.lim.Time)
	case stopOutput:
		return fmt.Sprintf("the script was stopped: what it printed and returned is more than its output limit of %s", mib(r.lim.Output))
	case stopToolCalls:
		return fmt.Sprintf("the script was stopped: it made more tool calls than its limit of %d", r.lim.ToolCalls)
	}
	return "the script was cancelled before it finished"
}

// errorText names a limit the engine enforces (memory, stack), or gives
// the error and its line.
func (r *run) errorText(msg string, line int) string {
	switch {
	case strings.Contains(msg, "out of memory"):
		return fmt.Sprintf("the script was stopped: it ran out of memory (its limit is %s)", mib(int(r.lim.Memory)))
	case strings.Contains(msg, "stack overflow"):
		return fmt.Sprintf("the script was stopped: stack overflow (its call depth limit is %d engine stack slots)", r.lim.Stack)
	case strings.Contains(msg, "interrupted") && time.Now().After(r.deadline.Add(-10*time.Millisecond)):
		return r.limitText(stopTime)
	}
	if line > 0 {
		return fmt.Sprintf("the script failed at line %d: %s", line, msg)
	}
	return "the script failed: " + msg
}

// lineOf is the script line of an engine error, when it has one.
func lineOf(err error) int {
	var e *quickjs.Error
	if errors.As(err, &e) {
		if e.LineNumber > 0 {
			return e.LineNumber
		}
	}
	return 0
}

func mib(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
