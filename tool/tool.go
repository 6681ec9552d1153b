// Package tool owns tools: their definition (a name, a description, an input
// JSON Schema and a handler), the registry an agent offers, and the dispatch
// of a round of calls — each checked first by the round's Gate (SPEC §14),
// reads run side by side and calls that change state one at a time in the
// model's order, each with a timeout, a denial, a panic or a bad input
// turned into an error result the model can act on.
//
// It must not turn results into text itself: every result goes through
// package result, once, in [Dispatcher.Round]. It knows nothing of
// providers, the workspace or MCP, and decides nothing of what may run:
// its Gate does (approval.Gate).
package tool

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/result"
)

// Handler runs one call. input is the call's arguments, already checked
// against the tool's schema. A handler should return when ctx is done.
type Handler func(ctx context.Context, input json.RawMessage) result.Result

// Tool is one tool the model can call.
type Tool struct {
	// Name is what the model calls it by: [a-zA-Z0-9_-], at most 64
	// characters, unique in a registry.
	Name string
	// Description tells the model what the tool does; its first line is its
	// summary. It must hold no per-session values, so that tool definitions
	// stay cacheable.
	Description string
	// InputSchema is the JSON Schema of the arguments; nil accepts any
	// object.
	InputSchema *jsonschema.Schema
	// OutputSchema, when set, is the JSON Schema of the structured
	// content (result.Result.Structured) every successful call of the
	// tool gives: what an MCP host is told the tool returns (package
	// mcpserver offers it as the tool's outputSchema, and a host checks
	// each result against it). It must describe every structured result
	// the handler can give, so nil for a tool without structured output
	// or whose structured output has no fixed shape.
	OutputSchema *jsonschema.Schema
	// Handler runs a call.
	Handler Handler
	// Timeout, when set, bounds each call in place of the dispatcher's
	// timeout: for a tool whose own configuration says how long it may
	// take (an MCP server's "timeout").
	Timeout time.Duration
	// Rerun promises that running the tool again with the same input has
	// no effect beyond its result: it changes nothing (workspace--read,
	// --grep, --list, --glob), or what it changes is left the same by a
	// second run. A call of such a tool that has no result because the
	// process running it stopped — so it may or may not have run — is run
	// again when the conversation is recovered (agent.Recover) instead of
	// being answered as interrupted. It must not be set for a tool that
	// writes, appends, sends or starts anything a second run would do
	// again (shell--run, workspace--write and --edit, code_execution,
	// whose scripts call other tools). An MCP tool's comes from its
	// server's annotations, which are the server's own claims (docs/mcp.md).
	Rerun bool
	// ReadOnly says the tool changes nothing: it only reads
	// (workspace--read, --grep, --list, --glob; an MCP tool whose server
	// says readOnlyHint). The permission policy's default allows its
	// calls without asking (package permission), and a round runs them
	// alongside each other (Concurrent). It must not be set for a tool
	// that writes, sends or starts anything.
	ReadOnly bool
	// Destructive says the tool may destroy or overwrite what it acts on:
	// an MCP tool whose destructiveHint is true, or left out (which means
	// true), and that is not read-only. Rules may name such tools
	// (`*[destructiveHint]`). It changes nothing in how a call runs.
	Destructive bool
	// Alongside says a call of the tool may run at the same time as the
	// round's other calls that may, though it is not read-only: what it
	// changes it orders itself. agent--delegate sets it: subagents run in
	// parallel, each its own conversation whose calls are checked and
	// ordered within its own rounds. It must not be set for a tool whose
	// calls change shared state directly (a file, a command's effects).
	Alongside bool

	once      sync.Once
	resolved  *jsonschema.Resolved
	shape     *shape // the schema checked on the input's bytes, when it can be
	schemaErr error
}

// Func defines a tool from a typed function: the arguments are decoded into
// In, whose JSON Schema is inferred from the struct (a field's `jsonschema`
// tag becomes its description; fields without omitempty are required). fn's
// value becomes the result (a result.Result is taken as it is) and a non-nil
// error an error result with its text.
func Func[In any](name, description string, fn func(ctx context.Context, in In) (any, error)) (*Tool, error) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: inferring the input schema: %w", name, err)
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	t := &Tool{Name: name, Description: description, InputSchema: schema}
	zero := emptyIsZero(reflect.TypeFor[In]())
	t.Handler = func(ctx context.Context, input json.RawMessage) result.Result {
		var in In
		if !zero || !emptyObject(input) {
			if err := json.Unmarshal(input, &in); err != nil {
				return result.Error(fmt.Sprintf("invalid input for %s: %v", name, err))
			}
		}
		return result.FromError(fn(ctx, in))
	}
	return t, nil
}

// emptyIsZero reports whether encoding/json decodes the empty object {}
// into a zero value of t by leaving it as it is: t is a struct (a map would
// be made, a pointer set) that decodes itself neither from JSON nor from
// text (a method would be called; a text decoder refuses an object). Func
// does not decode {} into such a type: its zero value is what decoding
// gives (TestFuncDecodesWhatEncodingJSONDecodes holds it to it).
func emptyIsZero(t reflect.Type) bool {
	if t == nil || t.Kind() != reflect.Struct {
		return false
	}
	p := reflect.PointerTo(t)
	return !p.Implements(reflect.TypeFor[json.Unmarshaler]()) && !p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// emptyObject reports whether input is the empty JSON object, {} with
// any JSON white space around and inside it.
func emptyObject(input []byte) bool {
	i, j := 0, len(input)
	for i < j && isSpace(input[i]) {
		i++
	}
	for j > i && isSpace(input[j-1]) {
		j--
	}
	if j-i < 2 || input[i] != '{' || input[j-1] != '}' {
		return false
	}
	for _, b := range input[i+1 : j-1] {
		if !isSpace(b) {
			return false
		}
	}
	return true
}

// isSpace reports whether b is JSON white space.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// MustFunc is Func for tools defined at start-up; it panics on an error,
// which can only come from a type the schema inference does not take.
func MustFunc[In any](name, description string, fn func(ctx context.Context, in In) (any, error)) *Tool {
	t, err := Func(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("tool name %q: must be 1 to 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("tool name %q: %q is not allowed; use [a-zA-Z0-9_-]", name, r)
		}
	}
	return nil
}

// Concurrent reports whether a call of t runs at the same time as the
// other calls of its round that may (ReadOnly or Alongside): the others
// run one at a time, in the order the model gave them (Dispatcher.Round).
func (t *Tool) Concurrent() bool { return t.ReadOnly || t.Alongside }

// Summary is the first line of the description.
func (t *Tool) Summary() string {
	s, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
	return strings.TrimSpace(s)
}

// validate checks input against the schema and returns the error the model
// reads, which names the offending field. The schema is resolved once, on
// the tool's first call. An input of a schema that only says which JSON
// types go where (as Func's are) is checked on its bytes, with no decoding
// (shape); any other input, and one that check does not accept, is decoded
// and checked by the general validator, whose error names the problem.
func (t *Tool) validate(input json.RawMessage) error {
	if t.InputSchema == nil {
		return nil
	}
	t.once.Do(func() {
		if t.resolved, t.schemaErr = t.InputSchema.Resolve(nil); t.schemaErr == nil {
			t.shape = shapeOf(t.InputSchema)
		}
	})
	if t.schemaErr != nil {
		return fmt.Errorf("the tool's own input schema is invalid: %w", t.schemaErr)
	}
	if t.shape != nil && json.Valid(input) && t.shape.accepts(input) {
		return nil
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return fmt.Errorf("the input is not valid JSON: %w", err)
	}
	if err := t.resolved.Validate(v); err != nil {
		return fmt.Errorf("%s; %s", strings.TrimPrefix(err.Error(), "validating root: "), t.fields())
	}
	return nil
}

// Check checks input against the tool's schema as a call's input is
// checked before it runs (empty input or JSON null being {}), and returns
// the error the model would read. It is for those who must know whether a
// call would run before running it (agent.Recover, which answers a call
// whose input no longer passes instead of running it).
func (t *Tool) Check(input json.RawMessage) error {
	return t.validate(orEmptyObject(input))
}

// orEmptyObject is input, or {} when it is empty or JSON null: some models
// send null for a tool that takes no arguments.
func orEmptyObject(input json.RawMessage) json.RawMessage {
	if in := strings.TrimSpace(string(input)); in == "" || in == "null" {
		return json.RawMessage("{}")
	}
	return input
}

// fields says which fields the tool's input takes, for a schema error: each
// property in the schema's order with its type, the required ones marked,
// so that the caller can correct the input without reading the schema.
func (t *Tool) fields() string {
	s := t.InputSchema
	if len(s.Properties) == 0 {
		if s.Type == "object" {
			return t.Name + " takes no fields"
		}
		return t.Name + "'s input schema names no fields"
	}
	names := make([]string, 0, len(s.Properties))
	for _, n := range s.PropertyOrder {
		if _, ok := s.Properties[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	rest := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	all := append(names, rest...)
	parts := make([]string, 0, min(len(all), maxFieldsNamed)+1)
	for _, n := range all[:min(len(all), maxFieldsNamed)] {
		p := s.Properties[n]
		typ := "any"
		switch {
		case p == nil:
		case p.Type != "":
			typ = p.Type
		case len(p.Types) > 0:
			// a pointer field's ["null", T] reads as T: null is the
			// field left out
			ts := slices.DeleteFunc(slices.Clone(p.Types), func(t string) bool { return t == "null" })
			if len(ts) == 0 {
				ts = p.Types
			}
			typ = strings.Join(ts, " or ")
		}
		if slices.Contains(s.Required, n) {
			typ += ", required"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, typ))
	}
	if len(all) > maxFieldsNamed {
		parts = append(parts, fmt.Sprintf("and %d more (see its input schema)", len(all)-maxFieldsNamed))
	}
	return t.Name + " takes " + strings.Join(parts, ", ")
}

// maxFieldsNamed bounds the fields a schema error lists.
const maxFieldsNamed = 30

// Registry is the set of tools an agent offers. The zero value is an empty
// registry ready to use; it is safe for concurrent use. A tool must not be
// changed once added: what consumers derive from the tools (the agent's
// encoded definitions) is kept until Version changes.
type Registry struct {
	mu      sync.RWMutex
	tools   map[string]*Tool
	version uint64 // changes added (Version)
}

// Version counts the changes made to the registry: it is different after
// every Add that added tools, so that a consumer may keep what it derives
// from the tools (their encoded definitions) until it changes. It says
// nothing about the tools themselves, which must not change once added.
func (r *Registry) Version() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// Add adds tools; a name already taken, an invalid name or a tool without a
// handler is an error and adds nothing.
func (r *Registry) Add(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range tools {
		if t == nil || t.Handler == nil {
			return fmt.Errorf("adding a tool: %v has no handler", t)
		}
		if err := checkName(t.Name); err != nil {
			return err
		}
		if _, ok := r.tools[t.Name]; ok || seen[t.Name] {
			return fmt.Errorf("adding tool %s: a tool of that name is already there", t.Name)
		}
		seen[t.Name] = true
	}
	if r.tools == nil {
		r.tools = map[string]*Tool{}
	}
	for _, t := range tools {
		r.tools[t.Name] = t
	}
	if len(tools) > 0 {
		r.version++
	}
	return nil
}

// Get returns the named tool, or nil.
func (r *Registry) Get(name string) *Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[name]
}

// Tools returns the tools sorted by name: the stable order in which they are
// listed and sent to providers.
func (r *Registry) Tools() []*Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	sortTools(out)
	return out
}

// Names returns the tool names in the stable order.
func (r *Registry) Names() []string {
	ts := r.Tools()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

func sortTools(ts []*Tool) {
	slices.SortFunc(ts, func(a, b *Tool) int { return strings.Compare(a.Name, b.Name) })
}
