// Package script owns code_execution: the tool through which a model runs a
// JavaScript program (modernc.org/quickjs, pure Go) that calls the agent's
// other tools, prints, and returns a value — many tool calls in one round
// trip of the model.
//
// A script's tool calls go through the same dispatch as the model's (schema
// checks, timeouts, panics), and their results through the one conversion:
// a script gets the text the model would get, as an MCP-shaped object
// (docs/contract.md §9). The package must not convert results itself beyond composing
// its own output, and the sandbox must offer no way out but the tools: no
// file system, network, processes or timers.
//
// Each script runs in an engine process (child.go): the program's
// executable started again, which this package's init turns into the
// engine before main runs. That is what lets the time limit end any
// script, whatever it catches; a program that imports this package must
// not exit or block in an init of its own when MYELIN_SCRIPT_ENGINE=1. An
// Engines made by NewPooledEngines keeps engines between the scripts of one
// conversation, never across conversations (pool.go); each script still
// gets a runtime of its own.
package script

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// Name is the tool's name.
const Name = "code_execution"

// Limits bound one script. Zero fields take the defaults. Every limit ends
// the script with an error result that names it.
type Limits struct {
	// Time bounds the script's wall time, tool calls included
	// (DefaultTime). A call's timeout_ms may lower it, not raise it.
	Time time.Duration
	// Memory bounds the engine's heap, in bytes (DefaultMemory).
	Memory int64
	// Stack bounds the call depth, in engine stack slots, about one per
	// JavaScript call (DefaultStack).
	Stack int
	// Output bounds what the script prints, in bytes (DefaultOutput); the
	// output is cut there and says so.
	Output int
	// ToolCalls bounds the tool calls of one script (DefaultToolCalls).
	ToolCalls int
}

// Defaults of Limits.
const (
	DefaultTime      = 60 * time.Second
	DefaultMemory    = 256 << 20
	DefaultStack     = 2000
	DefaultOutput    = 16 << 20
	DefaultToolCalls = 1000
)

func (l Limits) withDefaults() Limits {
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Stack <= 0 {
		l.Stack = DefaultStack
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.ToolCalls <= 0 {
		l.ToolCalls = DefaultToolCalls
	}
	return l
}

// Config is what code_execution needs from the agent around it.
type Config struct {
	// Tools are the tools a script may call: all of them but
	// code_execution itself, which a script cannot call.
	Tools *tool.Registry
	// Env is the conversion's environment for the results of a script's
	// calls: the workspace's store, where a result over its cap spills.
	// Its caps do not apply: a script gets each result whole up to
	// Limits.Output characters.
	Env result.Env
	// Timeout bounds each of a script's tool calls, as the dispatcher's
	// Timeout does the model's (0: tool.DefaultTimeout).
	Timeout time.Duration
	// Limits bound each script.
	Limits Limits
	// Trace, when set, gets a line per tool call a script makes: its
	// name, input size, duration and error flag.
	Trace io.Writer
	// Engines bounds the engine processes alive at once, this Config's
	// scripts with those of every Config that shares it; nil shares the
	// package's own (DefaultEngines), as every Config without one does. A
	// script of one call waits for an engine within its time limit; a
	// background script takes one at once or is refused.
	Engines *Engines
	// Background starts the scripts of code_execution {background: true};
	// nil refuses them, with an error saying so (`myelin tool call`, which
	// waits for nothing, has none).
	Background Launcher
}

//go:embed prelude.js
var prelude string

// input is code_execution's input. timeout_ms is read as a float64, so
// that no integer a model writes overflows on its way to a duration (one
// did, and 18446744073710 ms became 448 µs); the schema says integer.
type input struct {
	Code       string  `json:"code" jsonschema:"JavaScript: the body of an async function. Top-level await and return work."`
	TimeoutMS  float64 `json:"timeout_ms,omitempty"`
	Background bool    `json:"background,omitempty" jsonschema:"run the script in the background: the call returns at once with its id and journal, and the script goes on after the turn; inside it wake_agent(payload) wakes you with a message and sleep(ms) waits"`
}

// timeLimit is the script's wall time for a call's timeout_ms: the
// configured limit when it is 0 (absent) or larger, else timeout_ms, 1 ms
// at the least. The schema refuses a negative one.
func timeLimit(timeoutMS float64, limit time.Duration) time.Duration {
	if timeoutMS <= 0 || timeoutMS >= float64(limit.Milliseconds()) {
		return limit
	}
	return max(time.Duration(timeoutMS)*time.Millisecond, time.Millisecond)
}

// inputSchema is input's schema, with timeout_ms's range for this
// configuration in its description.
func inputSchema(c Config) *jsonschema.Schema {
	schema, err := jsonschema.For[input](nil)
	if err != nil {
		panic(err) // the struct above is fixed
	}
	t := schema.Properties["timeout_ms"]
	t.Type = "integer"
	t.Minimum = new(float64)
	t.Description = fmt.Sprintf("the script's wall time in milliseconds, tool calls included: from 1 to %d (the configured limit); a larger value, 0 or none means %d", c.Limits.Time.Milliseconds(), c.Limits.Time.Milliseconds())
	if c.Background != nil {
		t.Description += "; with background, its lifetime instead, up to the configured one"
	} else {
		delete(schema.Properties, "background")
	}
	return schema
}

// Tool is code_execution over the tools in c.Tools at the time of the
// call; its description lists those that are there now. Add it after the
// others.
func Tool(c Config) *tool.Tool {
	c.Limits = c.Limits.withDefaults()
	return &tool.Tool{
		Name:        Name,
		Description: describe(c),
		InputSchema: inputSchema(c),
		// The script bounds itself and says which limit it hit; the
		// dispatcher's bound is only a backstop.
		Timeout: c.Limits.Time + 5*time.Second,
		Handler: func(ctx context.Context, raw json.RawMessage) result.Result {
			var in input
			if err := json.Unmarshal(raw, &in); err != nil {
				return result.Error(fmt.Sprintf("invalid input for %s: %v", Name, err))
			}
			if in.TimeoutMS < 0 {
				return result.Error(fmt.Sprintf("timeout_ms must be from 1 to %d (the configured limit), got %v", c.Limits.Time.Milliseconds(), in.TimeoutMS))
			}
			if in.Background {
				if c.Background == nil {
					return result.Error(Name + " {background: true}: background scripts are not offered here (`myelin tool call` and programs without a background runner wait for nothing); run the script without background")
				}
				return c.Background.Start(ctx, in.Code, time.Duration(min(in.TimeoutMS, float64(math.MaxInt64/int64(time.Millisecond))))*time.Millisecond)
			}
			limits := c.Limits
			limits.Time = timeLimit(in.TimeoutMS, limits.Time)
			return Run(ctx, c, limits, in.Code)
		},
	}
}

// names are the tools a script can call, in the registry's order; never
// nil, so that an empty registry is the empty list `[]` to the prelude.
func names(reg *tool.Registry) []string {
	out := []string{}
	if reg == nil {
		return out
	}
	for _, n := range reg.Names() {
		if n != Name {
			out = append(out, n)
		}
	}
	return out
}

func describe(c Config) string {
	var b strings.Builder
	b.WriteString("Run JavaScript that calls the other tools: many calls, loops and filtering in one step.\n")
	b.WriteString("Use it to read, grep and summarize across many files, or to chain calls, instead of calling tools one by one.\n")
	b.WriteString("The code is the body of an async function: use await, and return a value.\n")
	b.WriteString(`Call a tool: const r = await tools["workspace--read"]({path: "a.txt"}). r is {content: [{type: "text", text}], isError, structuredContent?}; r.content[0].text is the text the tool gave (a string result is the string itself; JSON.parse only text that is JSON).` + "\n")
	b.WriteString("Calls started together (Promise.all) run concurrently. console.log prints.\n")
	b.WriteString("You get back what was printed, then the returned value (a string as itself, anything else as JSON). A thrown error makes an error result with its message and line.\n")
	fmt.Fprintf(&b, "Limits: %v wall time (timeout_ms may lower it), %d MiB memory, %d MiB of output, %d tool calls. No files, network, processes or timers except through the tools.\n",
		c.Limits.Time, c.Limits.Memory>>20, c.Limits.Output>>20, c.Limits.ToolCalls)
	if c.Background != nil {
		b.WriteString(c.Background.Describe() + "\n")
	}
	if list := names(c.Tools); len(list) > 0 {
		b.WriteString("Tools: " + strings.Join(list, ", "))
	} else {
		b.WriteString("Tools: none; the script can compute and print, not reach anything.")
	}
	return b.String()
}
