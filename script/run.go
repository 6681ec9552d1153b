package script

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	stopJournal   = "journal"
)

// Call is one tool call a script made, as its result's structured content
// and the trace record it.
type Call struct {
	Name       string `json:"name"`
	InputBytes int    `json:"inputBytes"`
	IsError    bool   `json:"isError"`
	MS         int64  `json:"ms"`
}

// run is myelin's side of one script: it reads what the engine process
// sends (engine.go), runs the script's tool calls, counts the limits, and
// ends the process when one is hit. Only the goroutine in Run touches its
// fields but calls and stopped, which are under mu: the calls' goroutines
// update calls, and the time limit sets stopped.
type run struct {
	c        Config
	lim      Limits
	d        *tool.Dispatcher
	conn     *conn
	script   int    // the script's number in its engine (conn.begin)
	id       string // names the spill files of the script's calls
	deadline time.Time
	callCtx  context.Context
	// cancelCalls ends callCtx: when a limit or a cancel stops the
	// script, or its engine dies, its calls' handlers are told at once,
	// and their results are dropped (loop, call).
	cancelCalls context.CancelFunc
	// workers run the calls that do not run where they were read (call).
	workers *tool.Workers
	// busy counts those calls while they run: one that settles while
	// others run lets them reach their own settle first (call).
	busy atomic.Int32

	out     strings.Builder // what it printed; a background script's goes to its journal
	printed int             // bytes printed, counted toward the output limit
	cut     bool
	hooks   *Hooks // a background script's (RunBackground); nil for one of a call
	last    *tail  // the end of a background script's output
	// journalErr is why a background script's journal could not be
	// written, which stopped it.
	journalErr string

	mu      sync.Mutex
	calls   []Call
	stopped string // the limit that stopped the script, once one did
	// calling says the reading goroutine runs a call (call, alone);
	// abandoned that loop returned without waiting for it to end
	// (abandon): the goroutine then touches nothing of r but under mu.
	calling, abandoned bool
	// over says runScript has returned: what its caller gave it
	// (Config.Trace) is the caller's again, and a call left behind
	// writes nothing to it.
	over bool

	finished bool   // an opFinish came
	kind     string // what it finished with (prelude.js): "undefined", "string", "json", "error", ...
	text     string
	full     int // the text's length before the engine cut it
	line     int

	end     string // how the engine ended (an end* constant); "" when it did not say
	endMsg  string
	endLine int
	endRSS  int64  // the engine's resident memory once the script ended
	lost    string // why the engine went away without saying how it ended
	heard   bool   // the engine said it took this script (opTaken): it may have run some of it
}

// Run runs one script under limits, its tool calls dispatched over
// c.Tools, and returns its result: what it printed, then the value it
// returned; an error result for a thrown error or a limit. The script runs
// in an engine process (child.go): one of its own, or one its Engines'
// pool kept for the conversation of ctx (tool.ConversationOf) or started
// ahead; an engine that hit a limit is gone when Run returns, whatever the
// script did.
func Run(ctx context.Context, c Config, limits Limits, code string) result.Result {
	return runScript(ctx, c, limits, code, nil)
}

// runScript is Run, and RunBackground when h is set.
func runScript(ctx context.Context, c Config, limits Limits, code string, h *Hooks) result.Result {
	lim := limits.withDefaults()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := &tool.Workers{}
	defer workers.Close()
	r := &run{
		c: c, lim: lim, id: scriptID(), deadline: time.Now().Add(lim.Time), callCtx: callCtx, cancelCalls: cancel, hooks: h, workers: workers,
		d: &tool.Dispatcher{Tools: c.Tools, Timeout: c.Timeout, Env: result.Env{
			Store: c.Env.Store, Now: c.Env.Now,
			// A script gets each result whole, up to its output bound.
			Limits: result.Limits{Agent: lim.Output, Round: lim.Output},
		}},
	}
	kind := ""
	if h != nil {
		kind = "background"
		r.id = h.ID
		r.last = &tail{max: h.tailBytes()}
	}
	defer func() {
		r.mu.Lock()
		r.over = true
		r.mu.Unlock()
	}()
	conv := tool.ConversationOf(ctx)
	list, _ := json.Marshal(names(c.Tools))
	retried := false
	for {
		p, busy := r.engineFor(ctx, h, conv)
		if p == nil {
			return result.Error(busy)
		}
		kept := p.kept
		r.conn, r.script = p.conn, p.begin()
		ms := max(time.Until(r.deadline).Milliseconds(), 1)
		r.loop(ctx, msg{Op: opRun, N: [4]int64{lim.Memory, int64(lim.Stack), ms, int64(lim.Output)}, S: [3]string{code, string(list), kind}})
		p.over(r.script)
		said := r.c.EnginePool().release(p, conv, r.clean())
		// An engine the pool kept that went away while it waited (killed
		// from outside) is not the script's failure: the script never ran
		// (the engine never said it took it), and runs again in another
		// engine, within the same time limit — once: an engine that dies
		// as it takes a script is the script's.
		if kept && !retried && r.lost != "" && !r.heard && r.stoppedBy() == "" {
			r.lost, retried = "", true
			// the engine's death cancelled the calls' context (loop);
			// none ran, and the script's run again gets its own
			r.callCtx, r.cancelCalls = context.WithCancel(ctx)
			defer r.cancelCalls()
			if h != nil {
				h.Slot = nil // given back when the kept engine was taken
			}
			continue
		}
		if said != "" && r.lost != "" {
			r.lost += " (" + said + ")"
		}
		return r.result()
	}
}

// loop sends the engine the script, then reads its messages, on a
// goroutine of its own (read), until the script ends or a limit stops
// it. The time limit and a cancel stop it from here, by ending the
// engine (a read or write then fails) and the calls' context. A call run
// where it was read (call) may hold the reading goroutine past that, its
// tool ignoring its context: loop then leaves that goroutine behind
// (abandon) and returns at once.
func (r *run) loop(ctx context.Context, script msg) {
	read := make(chan struct{})
	go func() {
		defer close(read)
		r.read(script)
	}()
	timeUp := time.NewTimer(time.Until(r.deadline))
	defer timeUp.Stop()
	gone := r.conn.gone
	for {
		select {
		case <-read:
			return
		case <-timeUp.C:
			r.stop(stopTime)
		case <-ctx.Done():
			r.stop(stopCancelled)
		case <-gone:
			// The engine died: nothing waits for its calls (a call run
			// where it was read ends now, and the read then sees the
			// EOF). One whose tool does not end with its context is
			// left behind: the engine, waiting for it alone, had nothing
			// more to say, as the read would have found.
			r.cancelCalls()
			gone = nil
			if r.abandon() {
				r.lost = "it exited without a word"
				return
			}
			continue
		}
		break
	}
	r.conn.kill()
	r.cancelCalls()
	if !r.abandon() {
		<-read
	}
}

// abandon leaves the reading goroutine behind when it runs a call where
// it was read, and reports whether it did: from then on it touches
// nothing of r but under mu, and ends once the call returns.
func (r *run) abandon() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calling {
		r.abandoned = true
	}
	return r.abandoned
}

// read sends the engine the script, then reads its messages until the
// script ends, the engine is gone, or loop abandoned it.
func (r *run) read(script msg) {
	if err := r.conn.sendNow(r.script, script); err != nil {
		if r.stoppedBy() == "" {
			r.lost = fmt.Sprintf("sending it the script: %v", err)
		}
		return
	}
	for {
		m, err := readMsg(r.conn.r)
		switch {
		case err != nil && r.stoppedBy() != "":
			return
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			r.lost = "it exited without a word"
			return
		case err != nil:
			r.lost = err.Error()
			return
		}
		if r.handle(m) {
			return
		}
	}
}

// handle takes one message from the engine and reports whether the script
// is over.
func (r *run) handle(m msg) bool {
	switch m.Op {
	case opTaken:
		r.heard = true
	case opPrint:
		r.print(m.S[0])
	case opCall:
		// The engine waits for this call alone: nothing comes from it
		// until the call settles, so the call runs here, without a
		// goroutine of its own.
		n, waits := waitingFor(r.conn.r)
		if r.call(int(m.N[0]), m.S[0], m.S[1], waits && n == 1) {
			return true // abandoned (loop): r is no longer this goroutine's
		}
	case opWait:
	case opFinish:
		r.finish(m.S[0], m.S[1], int(m.N[0]), int(m.N[1]))
	case opEnd:
		r.end, r.endMsg, r.endLine, r.endRSS = m.S[0], m.S[1], int(m.N[0]), m.N[1]
		return true
	default:
		r.lost = fmt.Sprintf("it sent op %q", m.Op)
		return true
	}
	return r.stoppedBy() != ""
}

func scriptID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "script_" + hex.EncodeToString(b)
}

// stop records the limit that stopped the script, the first one only; Run
// then ends the engine, which no script can resist.
func (r *run) stop(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == "" {
		r.stopped = why
	}
}

func (r *run) stoppedBy() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// print is console.log's way out: to the output, or a background script's
// journal.
func (r *run) print(text string) {
	if r.cut {
		return
	}
	if room := r.lim.Output - r.printed; len(text) > room {
		text = text[:runeCut(text, room)]
		r.cut = true
		r.stop(stopOutput)
	}
	r.printed += len(text)
	if r.hooks == nil {
		r.out.WriteString(text)
		return
	}
	r.last.Write([]byte(text))
	if _, err := io.WriteString(r.hooks.Journal, text); err != nil && r.journalErr == "" {
		r.journalErr = err.Error()
		r.stop(stopJournal)
	}
}

// runeCut is the largest cut at or before n that does not split a
// character of text.
func runeCut(text string, n int) int {
	if n >= len(text) {
		return len(text)
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return n
}

// call runs a tool call on its own goroutine, which hands the result to
// the engine; or, when the engine waits for it alone, on this one, the
// reading goroutine. Either runs it where it is (tool.CallHere): the
// script's time limit or a cancel ends callCtx (loop), and the call's
// result is then dropped; loop leaves a reading goroutine held by a tool
// that ignores its context behind, so the script's end never waits for
// a call. It reports whether the call ran here and loop abandoned this
// goroutine meanwhile.
func (r *run) call(ticket int, name, input string, alone bool) (abandoned bool) {
	if strings.HasPrefix(name, ownPrefix) {
		r.own(ticket, name, input)
		return false
	}
	r.mu.Lock()
	if len(r.calls) >= r.lim.ToolCalls {
		r.mu.Unlock()
		r.stop(stopToolCalls)
		return false
	}
	index := len(r.calls)
	r.calls = append(r.calls, Call{Name: name, InputBytes: len(input)})
	if alone {
		r.calling = true
	}
	r.mu.Unlock()
	run := func() (abandoned bool) {
		t0 := time.Now()
		var out result.Output
		if name == Name {
			out = result.Output{Text: "a script cannot call " + Name, IsError: true}
		} else {
			out = r.d.CallHere(r.callCtx, tool.Call{ID: r.id + "-" + strconv.Itoa(index+1), Name: name, Input: json.RawMessage(input)}, r.deadline)
		}
		ms := time.Since(t0).Milliseconds()
		r.mu.Lock()
		r.calls[index].IsError, r.calls[index].MS = out.IsError, ms
		if w := r.c.Trace; w != nil && !r.over {
			fmt.Fprintf(w, "%s %s %s input=%dB ms=%d error=%v\n", time.Now().UTC().Format(time.RFC3339), r.id, name, len(input), ms, out.IsError)
		}
		if alone {
			// only the reading goroutine's call says so: a call on a
			// goroutine of its own may end while it runs another
			abandoned, r.calling = r.abandoned, false
		}
		r.mu.Unlock()
		if abandoned {
			return true
		}
		if !alone && r.busy.Add(-1) > 0 {
			// Others started with it may be about to settle: this one
			// yields once, counted as a sender (so that theirs are left
			// to it), and those that were ready to run put their results
			// meanwhile: ten results cross in one or two writes, not
			// ten (ten at a time 1.2x, 0.9 writes a call to 0.2). It
			// waits for no call, only for the goroutines ready to run:
			// a call still running does not hold it back.
			r.conn.queued.Add(1)
			runtime.Gosched()
			r.conn.queued.Add(-1)
		}
		// Once the script is over, this is dropped: the engine is gone,
		// or waits for another script.
		_ = r.conn.sendFor(r.script, msg{Op: opSettle, Flag: out.IsError, N: [4]int64{int64(ticket)}, S: [3]string{out.Text, string(out.Structured)}})
		return false
	}
	if alone {
		return run()
	}
	// on a goroutine kept from the script's earlier calls: a fresh one
	// grows its stack for every call (a tenth of the CPU of calls
	// started together)
	r.busy.Add(1)
	r.workers.Go(func() { run() })
	return false
}

// clean reports whether the script's engine may run another script: the
// script hit no limit, myelin's (time, output, tool calls) or the
// engine's (memory, stack), the engine said how it ended, and it holds no
// more than keepResident (memory the allocator kept after the script's
// runtime was freed stays with the process).
func (r *run) clean() bool {
	if r.stoppedBy() != "" || r.lost != "" || r.endRSS > keepResident {
		return false
	}
	switch r.end {
	case endDone:
	case endError, endUnsettled:
		return !engineLimit(r.endMsg)
	default:
		return false
	}
	switch r.kind {
	case "unreadable":
		return false
	case "thrown", "error", "unencodable":
		return r.full <= len(r.text) && !engineLimit(r.text)
	}
	return true
}

// keepResident is the most memory an engine may hold after its script
// to be kept for another: an engine holds about 15 MiB after a small
// script, and 25 MiB after one that filled 256 MiB and freed it.
const keepResident = 64 << 20

// engineLimit reports whether an engine's error is one of its limits
// (errorText reads them the same way) or an interrupt.
func engineLimit(msg string) bool {
	return msg == "null" || strings.Contains(msg, "out of memory") || strings.Contains(msg, "stack overflow") || strings.Contains(msg, "interrupted")
}

// finish is how the script's promise ended. What it returned counts toward
// the output limit with what it printed, and so does what it threw.
func (r *run) finish(kind, text string, line, full int) {
	r.finished, r.kind, r.text, r.line, r.full = true, kind, text, line, full
	switch kind {
	case "string", "json":
		if r.printed+full > r.lim.Output {
			r.print(text) // cuts it where the limit falls, and stops the script
		}
	default:
		if room := r.lim.Output - r.printed; full > room {
			r.text = text[:runeCut(text, max(room, 0))]
		}
	}
}

// result composes the script's result: its output, then its value or
// what stopped it.
func (r *run) result() result.Result {
	output := r.out.String()
	if r.hooks != nil {
		output = r.last.String()
	}
	if r.cut {
		output += fmt.Sprintf("\n[output cut at the script's output limit of %s; the rest was not kept]\n", mib(r.lim.Output))
	}
	var value json.RawMessage = []byte("null")
	var tail string
	isError := true
	switch why := r.stoppedBy(); {
	case why != "":
		tail = r.limitText(why)
	case r.lost != "":
		tail = "the script engine stopped unexpectedly: " + r.lost
	case r.selfStopped():
		tail = r.limitText(stopTime)
	case r.end == endError:
		tail = r.errorText(r.endMsg, r.endLine)
	case r.end == endUnsettled:
		tail = "the script is waiting for a promise that nothing will settle (only tool calls settle by themselves here: there are no timers)"
	case r.end == endUnread || r.kind == "unreadable":
		tail = fmt.Sprintf("the script was stopped: it ran out of memory (its limit is %s), and what it returned or threw could not be read", mib(int(r.lim.Memory)))
	case r.end == endNoMemory:
		tail = fmt.Sprintf("the script was stopped: it ran out of memory (its limit is %s), with too little left to end it", mib(int(r.lim.Memory)))
	case !r.finished:
		tail = "the script did not finish"
	case r.kind == "string":
		tail, isError = r.text, false
		value, _ = json.Marshal(r.text)
	case r.kind == "json":
		tail, isError = r.text, false
		value = json.RawMessage(r.text)
	case r.kind == "undefined":
		isError = false
	default:
		tail = r.failureText()
	}
	r.mu.Lock()
	calls := append([]Call{}, r.calls...)
	r.mu.Unlock()
	structured, jerr := result.JSON(struct {
		Output    string          `json:"output"`
		Value     json.RawMessage `json:"value"`
		ToolCalls []Call          `json:"toolCalls"`
	}{output, value, calls})
	if jerr != nil {
		structured = nil
	}
	// A failure is said first, so that it is in the head the model reads
	// even when the output before it spills.
	text := output + tail
	switch {
	case isError && output != "" && r.hooks != nil:
		text = tail + "\nThe end of what it printed (the whole is in its journal):\n" + output
	case isError && output != "":
		text = tail + "\nWhat it printed before:\n" + output
	}
	return result.Result{Data: text, IsError: isError, Structured: structured}
}

// selfStopped reports whether the engine ended the script itself at its
// soft limit, selfStop before the script's (its limit may be less than
// the script's: what was left of it): ended then by one of the engine's
// limits — the interrupt, or, in a script that catches its errors in a
// loop, the error it could still make (null, out of memory). That is the
// time limit, as the kill at the limit said before the engine stopped
// first.
func (r *run) selfStopped() bool {
	if !time.Now().After(r.deadline.Add(-selfStop(r.lim.Time) - 10*time.Millisecond)) {
		return false
	}
	switch {
	case r.end == endError:
		return engineLimit(r.endMsg)
	case r.finished && (r.kind == "thrown" || r.kind == "error"):
		return engineLimit(r.text)
	}
	return false
}

// failureText says what the script threw ("error", "thrown") or why its
// value could not be encoded ("unencodable").
func (r *run) failureText() string {
	if r.full > len(r.text) {
		return fmt.Sprintf("the script failed%s: it threw a value of %s, over its output limit of %s; its start, cut there:\n%s",
			atLine(r.line), size(r.full), mib(r.lim.Output), r.text)
	}
	outOfMemory := r.text == "null" || strings.Contains(r.text, "out of memory")
	switch {
	case r.kind == "unencodable" && outOfMemory:
		return fmt.Sprintf("the script was stopped: it ran out of memory (its limit is %s) while its returned value was encoded as JSON", mib(int(r.lim.Memory)))
	case r.kind == "unencodable":
		return "the script failed: the returned value could not be encoded as JSON: " + r.text
	case r.kind == "thrown" && r.text == "null":
		// The engine throws null when it cannot make an error.
		return fmt.Sprintf("the script was stopped%s: it ran out of memory (its limit is %s), with no room left even for an error (what it ended with is null; a script that throws null itself reads the same)", atLine(r.line), mib(int(r.lim.Memory)))
	case r.kind == "thrown":
		return r.errorText("uncaught "+r.text, r.line)
	}
	return r.errorText(r.text, r.line)
}

func atLine(line int) string {
	if line > 0 {
		return fmt.Sprintf(" at line %d", line)
	}
	return ""
}

func (r *run) limitText(why string) string {
	switch why {
	case stopTime:
		return fmt.Sprintf("the script was stopped at its time limit of %v", r.lim.Time)
	case stopOutput:
		return fmt.Sprintf("the script was stopped: what it printed and returned is more than its output limit of %s", mib(r.lim.Output))
	case stopToolCalls:
		return fmt.Sprintf("the script was stopped: it made more tool calls than its limit of %d", r.lim.ToolCalls)
	case stopJournal:
		return "the script was stopped: its journal could not be written: " + r.journalErr
	}
	return "the script was cancelled before it finished"
}

// errorText names a limit the engine enforces (memory, stack), or gives
// the error and its line.
func (r *run) errorText(msg string, line int) string {
	switch {
	// The engine throws null when it has no memory left for an error.
	case strings.Contains(msg, "out of memory") || msg == "null":
		return fmt.Sprintf("the script was stopped: it ran out of memory (its limit is %s)", mib(int(r.lim.Memory)))
	case strings.Contains(msg, "stack overflow"):
		return fmt.Sprintf("the script was stopped: stack overflow (its call depth limit is %d engine stack slots)", r.lim.Stack)
	}
	return "the script failed" + atLine(line) + ": " + msg
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

// size is n bytes for a reader: MiB with a decimal from 1 MiB up.
func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
