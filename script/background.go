package script

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/myelin-run/myelin/result"
)

// A background script (code_execution {background: true}) outlives the
// call that started it. Package script runs it as it runs any script, in an
// engine process of its own, with what its runner gives it (Hooks): a
// journal for what it prints, and the answers to wake_agent and sleep,
// which the script asks of myelin itself, not of a tool. What runs it —
// the count per conversation, the wakes' limits and spacing, the lifetime,
// cancelling — is its runner's (package background), behind Launcher.

// ownPrefix starts the names of what a script asks myelin itself: outside
// the tools' alphabet ([a-zA-Z0-9_-]), so no tool has such a name.
const ownPrefix = "myelin:"

// Launcher starts background scripts: what code_execution {background:
// true} calls. It must return at once, with the script's id, its journal
// and its lifetime, or an error result naming the limit it hit.
type Launcher interface {
	// Start starts code as a background script of the conversation ctx
	// belongs to. lifetime, when above 0, asks for a shorter lifetime than
	// the configured one.
	Start(ctx context.Context, code string, lifetime time.Duration) result.Result
	// Describe says, in a line or two of code_execution's description,
	// what background: true does and its limits. It must hold no value
	// that changes from one session to the next (contract §8).
	Describe() string
}

// Hooks are what a background script gets from its runner.
type Hooks struct {
	// ID names the script: its journal, its tool calls' spill files and
	// trace lines.
	ID string
	// Journal gets what the script prints, as it prints it. An error
	// writing it stops the script.
	Journal io.Writer
	// Wake answers wake_agent(payload), called from the script's line
	// line (0 when unknown): the text the script's promise resolves to,
	// or an error it rejects with (a limit, named). It must not wait for
	// the agent: a wake that is early is queued, never dropped.
	Wake func(line int, payload result.Result) (string, error)
	// Sleep answers sleep(ms): it returns after d, or with ctx's error
	// once the script is stopped.
	Sleep func(ctx context.Context, d time.Duration) error
	// Slot, when set, is the engine the runner took for the script
	// (Engines.TryTake, on Config.EnginePool), so that its Launcher could
	// say at once that it starts; the script frees it when it ends, or
	// as it starts when it runs in an engine a pool kept (which holds a
	// slot of its own). Nil takes one as the script starts, or fails it
	// when none is free.
	Slot *Slot
	// Tail is how many bytes of the end of what the script printed its
	// result keeps (DefaultTail when 0): the whole is in the journal.
	Tail int
}

// DefaultTail is how much of a background script's last output its result
// keeps.
const DefaultTail = 4 << 10

func (h *Hooks) tailBytes() int {
	if h.Tail > 0 {
		return h.Tail
	}
	return DefaultTail
}

// RunBackground runs a background script until it ends, is cancelled (ctx)
// or hits a limit, and returns its result as Run does, but for its output:
// what it printed went to h.Journal, and the result holds the end of it
// (h.Tail). Its tool calls are not counted against Limits.ToolCalls when
// they are wake_agent or sleep.
func RunBackground(ctx context.Context, c Config, limits Limits, code string, h Hooks) result.Result {
	return runScript(ctx, c, limits, code, &h)
}

// own answers what a script asks myelin itself (ownPrefix): wake_agent and
// sleep, on a goroutine of its own, as a tool call is.
func (r *run) own(ticket int, name, input string) {
	answer := func(text string, err error) {
		m := msg{Op: opSettle, N: [4]int64{int64(ticket)}, S: [3]string{text, ""}}
		if err != nil {
			m.Flag, m.S[0] = true, err.Error()
		}
		_ = r.conn.sendFor(r.script, m) // dropped once the script is over: nothing waits
	}
	h := r.hooks
	switch name {
	case ownPrefix + "wake_agent":
		var in struct {
			Line    int             `json:"line"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(input), &in); err != nil || h == nil || h.Wake == nil {
			answer("", fmt.Errorf("wake_agent works only in a background script"))
			return
		}
		go func() { answer(h.Wake(in.Line, Payload(in.Payload))) }()
	case ownPrefix + "sleep":
		var in struct {
			MS float64 `json:"ms"`
		}
		if err := json.Unmarshal([]byte(input), &in); err != nil || h == nil || h.Sleep == nil {
			answer("", fmt.Errorf("sleep works only in a background script"))
			return
		}
		go func() {
			d := time.Duration(min(in.MS, float64(365*24*time.Hour/time.Millisecond)) * float64(time.Millisecond))
			answer("", h.Sleep(r.callCtx, d))
		}()
	default:
		answer("", fmt.Errorf("%s is not something a script can ask", strings.TrimPrefix(name, ownPrefix)))
	}
}

// Payload is the result that a wake_agent payload, as JSON, stands for: a
// string as itself, any other value as the value (the one conversion then
// writes it as compact JSON with sorted keys), numbers kept as written.
func Payload(raw json.RawMessage) result.Result {
	if len(raw) == 0 {
		return result.Result{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return result.Result{Data: s}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return result.Error(fmt.Sprintf("the wake's payload is not JSON: %v", err))
	}
	return result.Result{Data: v}
}
