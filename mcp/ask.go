package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitation is a server asking the user for input during a call
// (elicitation/create): a form of fields, or a URL to visit.
type Elicitation struct {
	Server  string // the server's name in the config
	Message string // what the server says it wants, to show as it is
	// Mode is "form" (fill in Fields) or "url" (visit URL, then say done).
	Mode   string
	Fields []Field // form mode: the requested schema's properties
	URL    string  // url mode
	ID     string  // url mode: the elicitation's id
	// Schema is the form's requested schema as the server sent it (form
	// mode): Check holds an answer to it whole (lengths, bounds), as the
	// SDK does before the server is sent the answer.
	Schema json.RawMessage
}

// Field is one property of a form elicitation's requested schema.
type Field struct {
	Name        string
	Title       string
	Description string
	Type        string   // "string", "number", "integer" or "boolean"
	Enum        []string // the values a string may take, when it is one of a list
	Default     any      // the server's default, nil when it gives none
	Required    bool
}

// Answer is the user's answer to an elicitation.
type Answer struct {
	// Action is "accept", "decline" or "cancel".
	Action string
	// Content holds the fields' values when the form was accepted.
	Content map[string]any
}

// Elicitor asks the user what a server wants to know. The caller supplies
// it (cmd/myelin on a terminal; the HTTP API as an event its client
// answers): package mcp must not read a terminal itself. It may be called
// from several servers at once.
type Elicitor interface {
	Elicit(ctx context.Context, e *Elicitation) (Answer, error)
}

// callsKey is the context key of Calls.
type callsKey struct{}

// callNumbers number the calls of this process, for inflight.
var callNumbers atomic.Int64

// inFlight records ctx as one of the server's calls in flight, until the
// returned func is called.
func (s *server) inFlight(ctx context.Context) (done func()) {
	n := callNumbers.Add(1)
	s.inflight.Store(n, ctx)
	return func() { s.inflight.Delete(n) }
}

// withCalls is ctx carrying the contexts of the server's calls in flight
// now, oldest first.
func (s *server) withCalls(ctx context.Context) context.Context {
	type call struct {
		n   int64
		ctx context.Context
	}
	var calls []call
	s.inflight.Range(func(k, v any) bool {
		calls = append(calls, call{k.(int64), v.(context.Context)})
		return true
	})
	slices.SortFunc(calls, func(a, b call) int { return int(a.n - b.n) })
	out := make([]context.Context, len(calls))
	for i, c := range calls {
		out[i] = c.ctx
	}
	return WithCalls(ctx, out...)
}

// WithCalls is ctx carrying calls as the calls in flight that Calls gives:
// what package mcp hands an Elicitor or a Sampler; a test of one makes its
// ctx with it.
func WithCalls(ctx context.Context, calls ...context.Context) context.Context {
	return context.WithValue(ctx, callsKey{}, calls)
}

// Calls are, in an Elicitor's or a Sampler's ctx, the contexts of the
// calls to the asking server that were in flight when it asked, oldest
// first (the contexts myelin's tool calls were made with). The protocol
// does not say which call a request belongs to: a caller that runs
// several conversations (the HTTP API) reads from them whose request it
// is, and must refuse to guess when they disagree. Empty when the server
// asked outside any call.
func Calls(ctx context.Context) []context.Context {
	calls, _ := ctx.Value(callsKey{}).([]context.Context)
	return calls
}

// elicit answers a server's elicitation/create: through the Elicitor, or,
// when there is none (no one to ask), declined, and the user told why.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	ctx = s.withCalls(ctx)
	p := req.Params
	e := &Elicitation{Server: s.cfg.Name, Message: p.Message, Mode: p.Mode, URL: p.URL, ID: p.ElicitationID}
	if e.Mode == "" {
		e.Mode = "form"
		if p.URL != "" {
			e.Mode = "url"
		}
	}
	if e.Mode == "form" {
		fields, err := formFields(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("the requested schema: %w", err)
		}
		e.Fields = fields
		if p.RequestedSchema != nil {
			e.Schema, _ = json.Marshal(p.RequestedSchema) // formFields marshalled it already
		}
	}
	if s.opts.Elicitor == nil {
		s.opts.notify(fmt.Sprintf("MCP server %s asked for input (%q); declined: no one to ask in a run that is not on a terminal", s.cfg.Name, oneLine(p.Message)))
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	a, err := s.opts.Elicitor.Elicit(ctx, e)
	if err != nil {
		return nil, err
	}
	switch a.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, fmt.Errorf("the elicitor answered %q, not accept, decline or cancel", a.Action)
	}
	if a.Action != "accept" || e.Mode == "url" {
		a.Content = nil
	}
	return &sdk.ElicitResult{Action: a.Action, Content: a.Content}, nil
}

// formFields reads a requested schema: an object of flat properties,
// ordered required first, then by name (the schema's own order is not
// kept by the SDK).
func formFields(schema any) ([]Field, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Properties map[string]struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
			Default     any      `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not an object schema of flat properties: %w", err)
	}
	var out []Field
	for name, p := range doc.Properties {
		out = append(out, Field{Name: name, Title: p.Title, Description: p.Description, Type: p.Type,
			Enum: p.Enum, Default: p.Default, Required: slices.Contains(doc.Required, name)})
	}
	slices.SortFunc(out, func(a, b Field) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Check checks content, the answer to a form elicitation accepted, against
// its fields, and returns it with the defaults of the fields it leaves
// out. The error names the field and what was wrong with its value: a
// field the form does not have, a required one missing (with no default),
// a value of another type, an integer with a fraction, a string not one
// of its enum.
func (e *Elicitation) Check(content map[string]any) (map[string]any, error) {
	out := map[string]any{}
	known := map[string]bool{}
	var names []string
	for _, f := range e.Fields {
		known[f.Name] = true
		names = append(names, f.Name)
	}
	for name := range content {
		if !known[name] {
			return nil, fmt.Errorf("the form has no field %q (its fields: %s)", name, strings.Join(names, ", "))
		}
	}
	for _, f := range e.Fields {
		v, ok := content[f.Name]
		if !ok || v == nil {
			switch {
			case f.Default != nil:
				out[f.Name] = f.Default
			case f.Required:
				return nil, fmt.Errorf("field %q is required", f.Name)
			}
			continue
		}
		if err := checkValue(f, v); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		out[f.Name] = v
	}
	if len(e.Schema) > 0 {
		var schema jsonschema.Schema
		if err := json.Unmarshal(e.Schema, &schema); err != nil {
			return nil, fmt.Errorf("the form's schema does not read: %w", err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("the form's schema does not resolve: %w", err)
		}
		if err := resolved.Validate(out); err != nil {
			return nil, fmt.Errorf("the answer does not fit the form's schema: %w", err)
		}
	}
	return out, nil
}

// checkValue checks one field's value, as JSON decodes it.
func checkValue(f Field, v any) error {
	switch f.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s is not a boolean (true or false)", jsonText(v))
		}
	case "integer", "number":
		n, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%s is not a number", jsonText(v))
		}
		if f.Type == "integer" && n != float64(int64(n)) {
			return fmt.Errorf("%s is not an integer", jsonText(v))
		}
	default: // "string", or a type the form does not name: text
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a string", jsonText(v))
		}
		if len(f.Enum) > 0 && !slices.Contains(f.Enum, str) {
			return fmt.Errorf("%q is not one of %s", str, strings.Join(f.Enum, ", "))
		}
	}
	return nil
}

// jsonText is v as JSON, for an error.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Sample is a server asking the conversation's model to complete
// (sampling/createMessage).
type Sample struct {
	Server    string
	System    string
	Messages  []SampleMessage
	MaxTokens int64
}

// SampleMessage is one message of a Sample: text only.
type SampleMessage struct {
	Role string // "user" or "assistant"
	Text string
}

// Completion is the model's answer to a Sample, and what it cost.
type Completion struct {
	Text       string
	Model      string
	StopReason string // "endTurn", "maxTokens", ...
	Tokens     int64  // input and output tokens of the request
}

// Sampler completes a server's Sample with the conversation's own
// provider and model. The caller supplies it (the agent's command); package
// mcp must not pick a provider itself.
type Sampler interface {
	Sample(ctx context.Context, s *Sample) (Completion, error)
}

// budget is what is left of a server's sampling allowance.
type budget struct {
	mu             sync.Mutex
	requests       int
	tokens         int64
	maxReq         int
	maxTok         int64
	inFlightTokens int64
}

// take reserves a request and its token bound, or says why it cannot.
func (b *budget) take(maxTokens int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.requests >= b.maxReq {
		return fmt.Errorf("its sampling budget of %d requests is spent", b.maxReq)
	}
	if b.tokens+b.inFlightTokens+maxTokens > b.maxTok {
		return fmt.Errorf("a request of up to %d tokens would go over its sampling budget (%d of %d tokens used)", maxTokens, b.tokens+b.inFlightTokens, b.maxTok)
	}
	b.requests++
	b.inFlightTokens += maxTokens
	return nil
}

// settle replaces a request's reservation by what it cost.
func (b *budget) settle(reserved, used int64) {
	b.mu.Lock()
	b.inFlightTokens -= reserved
	b.tokens += used
	b.mu.Unlock()
}

// sample answers a server's sampling/createMessage, within its budget,
// through the Sampler, and tells the user.
func (s *server) sample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	ctx = s.withCalls(ctx)
	p := req.Params
	smp := &Sample{Server: s.cfg.Name, System: p.SystemPrompt, MaxTokens: p.MaxTokens}
	for i, m := range p.Messages {
		t, ok := m.Content.(*sdk.TextContent)
		if !ok {
			return nil, fmt.Errorf("message %d: myelin samples text only, not %T", i, m.Content)
		}
		smp.Messages = append(smp.Messages, SampleMessage{Role: string(m.Role), Text: t.Text})
	}
	if smp.MaxTokens <= 0 {
		return nil, fmt.Errorf("maxTokens must be positive, got %d", smp.MaxTokens)
	}
	if err := s.budget.take(smp.MaxTokens); err != nil {
		s.opts.notify(fmt.Sprintf("MCP server %s asked the model to complete; refused: %v", s.cfg.Name, err))
		return nil, fmt.Errorf("myelin refused: %w (the server's \"sampling\" entry in the MCP config sets it)", err)
	}
	last := ""
	if n := len(smp.Messages); n > 0 {
		last = smp.Messages[n-1].Text
	}
	s.opts.notify(fmt.Sprintf("MCP server %s asks the model to complete (up to %d tokens): %s", s.cfg.Name, smp.MaxTokens, oneLine(last)))
	c, err := s.opts.Sampler.Sample(ctx, smp)
	s.budget.settle(smp.MaxTokens, c.Tokens)
	if err != nil {
		return nil, fmt.Errorf("the model did not complete: %w", err)
	}
	s.opts.notify(fmt.Sprintf("MCP server %s got %d chars from %s (%d tokens)", s.cfg.Name, len(c.Text), c.Model, c.Tokens))
	return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: c.Text}, Model: c.Model, Role: "assistant", StopReason: c.StopReason}, nil
}

// oneLine is s on one line, at most 120 characters, for notices.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}
