package telemetry

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// The spans a turn makes, by the GenAI semantic conventions
// (docs/telemetry.md): a turn is an invoke_agent span, each provider
// request a chat span under it, each tool call an execute_tool span under
// it, and each change the agent makes to what it sends (results cleared,
// a summary, a resend after a too-long refusal) an event on the turn's
// span. Each Start function returns at once, with ctx as it was and a
// zero span whose methods do nothing, when telemetry is off: one atomic
// load, nothing allocated.

// Attribute keys of the GenAI conventions, and myelin's own (myelin.*).
const (
	keyOperation      = "gen_ai.operation.name"
	keyProvider       = "gen_ai.provider.name"
	keyAgentName      = "gen_ai.agent.name"
	keyConversation   = "gen_ai.conversation.id"
	keyRequestModel   = "gen_ai.request.model"
	keyMaxTokens      = "gen_ai.request.max_tokens"
	keyFinishReasons  = "gen_ai.response.finish_reasons"
	keyInputTokens    = "gen_ai.usage.input_tokens"
	keyOutputTokens   = "gen_ai.usage.output_tokens"
	keyCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	keyCacheCreation  = "gen_ai.usage.cache_creation.input_tokens"
	keyTokenType      = "gen_ai.token.type"
	keyToolName       = "gen_ai.tool.name"
	keyToolCallID     = "gen_ai.tool.call.id"
	keyToolType       = "gen_ai.tool.type"
	keyToolArguments  = "gen_ai.tool.call.arguments"
	keyToolResult     = "gen_ai.tool.call.result"
	keyErrorType      = "error.type"
	keyWire           = "myelin.wire"
	keyRequestBytes   = "myelin.request.bytes"
	keyWindowTokens   = "myelin.window.tokens"
	keyWindowLimit    = "myelin.window.limit"
	keyRounds         = "myelin.turn.rounds"
	keyReason         = "myelin.turn.reason"
	keyResultBytes    = "myelin.tool.result.bytes"
	keyResultIsError  = "myelin.tool.result.is_error"
	keySpillPath      = "myelin.tool.result.spill_path"
	keyEditKind       = "myelin.context.edit.kind"
	keyEditBefore     = "myelin.context.tokens_before"
	keyEditAfter      = "myelin.context.tokens_after"
	keyEditCleared    = "myelin.context.results_cleared"
	keyRetryAttempt   = "myelin.retry.attempt"
	keyRetryStatus    = "http.response.status_code"
	contextEditEvent  = "myelin.context.edit"
	retryEvent        = "myelin.provider.retry"
	operationChat     = "chat"
	operationInvoke   = "invoke_agent"
	operationTool     = "execute_tool"
	toolTypeFunction  = "function"
	errorTypeOther    = "_OTHER"
	errorTypeCanceled = "canceled"
	errorTypeTimeout  = "timeout"
	errorTypeTool     = "tool_error"
)

// Usage is what a request or a turn used, in tokens, as the wires count
// it: Input is the input neither read from nor written to the prompt
// cache (history.Usage's meaning). The spans' gen_ai.usage.input_tokens
// is the whole input, cached or not, as the conventions ask.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
}

// input is the whole input: fresh, read from the cache and written to it.
func (u Usage) input() int { return u.Input + u.CacheRead + u.CacheWrite }

// append is attrs with u's attributes.
func (u Usage) append(attrs []attribute.KeyValue) []attribute.KeyValue {
	return append(attrs,
		attribute.Int(keyInputTokens, u.input()),
		attribute.Int(keyOutputTokens, u.Output),
		attribute.Int(keyCacheRead, u.CacheRead),
		attribute.Int(keyCacheCreation, u.CacheWrite),
	)
}

// ProviderName is the conventions' gen_ai.provider.name of a wire, as
// --provider names it (provider.WireName): anthropic, openai (both OpenAI
// wires, and the servers compatible with them), gcp.gemini, aws.bedrock,
// gcp.vertex_ai. The Google Cloud gateway ("google-cloud") serves
// Anthropic's own API under Google's sign-in, so it is "anthropic" (the
// span's myelin.wire says which wire). A wire it does not know is named
// as it is; "" is "_OTHER".
func ProviderName(wire string) string {
	switch wire {
	case "anthropic", "google-cloud":
		return "anthropic"
	case "openai", "openai-responses":
		return "openai"
	case "gemini":
		return "gcp.gemini"
	case "bedrock":
		return "aws.bedrock"
	case "vertex":
		return "gcp.vertex_ai"
	case "":
		return errorTypeOther
	}
	return wire
}

// ErrorType is the conventions' error.type of err: "canceled" for a
// cancelled context, "timeout" for a deadline, the HTTP status when err
// carries one (StatusCode() int, as the providers' SDK errors do),
// "_OTHER" otherwise; "" for nil.
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return errorTypeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return errorTypeTimeout
	}
	if status := statusOf(err); status > 0 {
		return strconv.Itoa(status)
	}
	return errorTypeOther
}

// statusOf is the first HTTP status above 0 in err's chain (a wire's
// error may wrap another that has the status).
func statusOf(err error) int {
	for err != nil {
		if s, ok := err.(interface{ StatusCode() int }); ok && s.StatusCode() > 0 {
			return s.StatusCode()
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if s := statusOf(e); s > 0 {
					return s
				}
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}

// The span kinds' start options, made once (an option made in the call
// is an allocation each time).
var (
	kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
	kindClient   = trace.WithSpanKind(trace.SpanKindClient)
)

// fail marks span as ended by err (error.type and an Error status).
func fail(span trace.Span, err error) {
	span.SetAttributes(attribute.String(keyErrorType, ErrorType(err)))
	span.SetStatus(codes.Error, err.Error())
}

// Turn is what a turn's span says of it.
type Turn struct {
	Conversation string // the conversation's id
	Agent        string // gen_ai.agent.name; "" is "myelin"
	Model        string // the model its requests name
	Wire         string // the provider's wire (provider.WireName)
}

// TurnSpan is a turn's invoke_agent span; its zero value (telemetry off)
// does nothing.
type TurnSpan struct{ span trace.Span }

// StartTurn starts the span of a turn, "invoke_agent {agent}" (kind
// INTERNAL), as a child of the span ctx carries, and returns ctx carrying
// it: the turn's requests, tool calls and context edits go under it.
func StartTurn(ctx context.Context, t Turn) (context.Context, TurnSpan) {
	s := current.Load()
	if s == nil {
		return ctx, TurnSpan{}
	}
	if t.Agent == "" {
		t.Agent = "myelin"
	}
	ctx, span := s.tracer.Start(ctx, operationInvoke+" "+t.Agent, kindInternal,
		trace.WithAttributes(
			attribute.String(keyOperation, operationInvoke),
			attribute.String(keyAgentName, t.Agent),
			attribute.String(keyConversation, t.Conversation),
			attribute.String(keyProvider, ProviderName(t.Wire)),
			attribute.String(keyWire, t.Wire),
			attribute.String(keyRequestModel, t.Model),
		))
	return ctx, TurnSpan{span}
}

// TurnEnd is how a turn ended.
type TurnEnd struct {
	Reason string // the turn's Reason ("end_turn", "round_limit", ...)
	Rounds int
	Usage  Usage // the turn's, summaries included
	Err    error // what failed the turn; nil when it ended
}

// End ends the turn's span with how it ended.
func (t TurnSpan) End(e TurnEnd) {
	if t.span == nil {
		return
	}
	attrs := e.Usage.append(make([]attribute.KeyValue, 0, 6))
	attrs = append(attrs, attribute.Int(keyRounds, e.Rounds))
	if e.Reason != "" {
		attrs = append(attrs, attribute.String(keyReason, e.Reason))
	}
	t.span.SetAttributes(attrs...)
	if e.Err != nil {
		fail(t.span, e.Err)
	}
	t.span.End()
}

// Chat is what a provider request's span says of it before it is sent.
type Chat struct {
	Conversation string
	Model        string
	Wire         string // provider.WireName
	MaxTokens    int    // the answer's bound
	// WindowTokens is the request's size as the agent estimated it, in
	// tokens, and WindowLimit the context window it must fit: how full
	// the window is (0: not known).
	WindowTokens, WindowLimit int
}

// ChatSpan is a provider request's chat span; its zero value (telemetry
// off) does nothing.
type ChatSpan struct {
	span     trace.Span
	start    time.Time
	measures *chatMeasures // what its metrics are recorded with
}

// StartChat starts the span of one provider request, "chat {model}"
// (kind CLIENT), as a child of the span ctx carries (the turn's), and
// returns ctx carrying it, for the request to be sent under: its retries
// are events of it.
func StartChat(ctx context.Context, c Chat) (context.Context, ChatSpan) {
	s := current.Load()
	if s == nil {
		return ctx, ChatSpan{}
	}
	provider := ProviderName(c.Wire)
	attrs := []attribute.KeyValue{
		attribute.String(keyOperation, operationChat),
		attribute.String(keyProvider, provider),
		attribute.String(keyWire, c.Wire),
		attribute.String(keyRequestModel, c.Model),
		attribute.String(keyConversation, c.Conversation),
	}
	if c.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int(keyMaxTokens, c.MaxTokens))
	}
	if c.WindowLimit > 0 {
		attrs = append(attrs, attribute.Int(keyWindowTokens, c.WindowTokens), attribute.Int(keyWindowLimit, c.WindowLimit))
	}
	m := chatMeasuresOf(provider, c.Model)
	ctx, span := s.tracer.Start(ctx, m.name, kindClient, trace.WithAttributes(attrs...))
	return ctx, ChatSpan{span: span, start: time.Now(), measures: m}
}

// Recording reports whether c exports anything: the caller may then do
// work only its attributes need.
func (c ChatSpan) Recording() bool { return c.span != nil }

// Retry records, on the request's span, that the request is about to be
// sent again as attempt (2 for the first retry), the one before having
// failed with HTTP status (0: no answer).
func (c ChatSpan) Retry(attempt, status int) {
	if c.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int(keyRetryAttempt, attempt)}
	if status != 0 {
		attrs = append(attrs, attribute.Int(keyRetryStatus, status))
	}
	c.span.AddEvent(retryEvent, trace.WithAttributes(attrs...))
}

// ChatEnd is what came of a provider request.
type ChatEnd struct {
	FinishReason string // the answer's stop reason, in the wire's words
	Usage        Usage  // zero when the answer said none
	RequestBytes int    // the body as sent; 0 when not known
	Err          error  // why the request failed (its last attempt)
}

// End ends the request's span and records its metrics: the operation's
// duration and, with usage, the input and output tokens
// (gen_ai.client.operation.duration, gen_ai.client.token.usage).
func (c ChatSpan) End(ctx context.Context, e ChatEnd) {
	if c.span == nil {
		return
	}
	took := time.Since(c.start).Seconds()
	counted := e.Usage != Usage{}
	if c.span.IsRecording() { // a span the sampler dropped is given nothing
		attrs := make([]attribute.KeyValue, 0, 8)
		if e.FinishReason != "" {
			attrs = append(attrs, attribute.StringSlice(keyFinishReasons, []string{e.FinishReason}))
		}
		if e.RequestBytes > 0 {
			attrs = append(attrs, attribute.Int(keyRequestBytes, e.RequestBytes))
		}
		if counted {
			attrs = e.Usage.append(attrs)
		}
		c.span.SetAttributes(attrs...)
	}
	m := c.measures
	duration := m.base
	if e.Err != nil {
		fail(c.span, e.Err)
		// an error's set is made each time: errors are few
		duration = []metric.RecordOption{metric.WithAttributes(append(append([]attribute.KeyValue(nil), m.kvs...), attribute.String(keyErrorType, ErrorType(e.Err)))...)}
	}
	c.span.End()
	if s := current.Load(); s != nil {
		s.inst.operation.Record(ctx, took, duration...)
		if counted {
			s.inst.tokens.Record(ctx, int64(e.Usage.input()), m.input...)
			s.inst.tokens.Record(ctx, int64(e.Usage.Output), m.output...)
		}
	}
}

// Tool is what a tool call's span says of it before it runs.
type Tool struct {
	Name   string
	CallID string
	// Arguments are the call's input, exported only when content capture
	// is on (CaptureContentEnv).
	Arguments []byte
}

// ToolSpan is a tool call's execute_tool span; its zero value (telemetry
// off) does nothing.
type ToolSpan struct {
	span     trace.Span
	start    time.Time
	name     string
	measures *toolMeasures
	content  bool
}

// Started reports whether t is a span StartTool started (not the zero
// ToolSpan).
func (t ToolSpan) Started() bool { return t.span != nil }

// StartTool starts the span of one tool call, "execute_tool {name}"
// (kind INTERNAL), as a child of the span ctx carries, and returns ctx
// carrying it: the handler runs under it, so what it sends over HTTP
// (an MCP server's call, through Transport) carries its traceparent.
func StartTool(ctx context.Context, t Tool) (context.Context, ToolSpan) {
	s := current.Load()
	if s == nil {
		return ctx, ToolSpan{}
	}
	attrs := []attribute.KeyValue{
		attribute.String(keyOperation, operationTool),
		attribute.String(keyToolName, t.Name),
		attribute.String(keyToolCallID, t.CallID),
		attribute.String(keyToolType, toolTypeFunction),
	}
	if s.content && len(t.Arguments) > 0 {
		attrs = append(attrs, attribute.String(keyToolArguments, string(t.Arguments)))
	}
	m := toolMeasuresOf(t.Name)
	ctx, span := s.tracer.Start(ctx, m.name, kindInternal, trace.WithAttributes(attrs...))
	return ctx, ToolSpan{span: span, start: time.Now(), name: t.Name, measures: m, content: s.content}
}

// ToolEnd is what a tool call gave.
type ToolEnd struct {
	Bytes     int    // the result's text, as the model gets it, in bytes
	SpillPath string // the workspace file the whole result was spilled to; "" when none
	IsError   bool   // the result is an error (the tool's, or the dispatcher's: denied, timed out, ...)
	// Result is the result's text, exported only when content capture is
	// on (CaptureContentEnv).
	Result string
}

// End ends the call's span and records its duration (myelin.tool.duration).
func (t ToolSpan) End(ctx context.Context, e ToolEnd) {
	if t.span == nil {
		return
	}
	took := time.Since(t.start).Seconds()
	if t.span.IsRecording() { // a span the sampler dropped is given nothing
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, attribute.Int(keyResultBytes, e.Bytes), attribute.Bool(keyResultIsError, e.IsError))
		if e.SpillPath != "" {
			attrs = append(attrs, attribute.String(keySpillPath, e.SpillPath))
		}
		if t.content {
			attrs = append(attrs, attribute.String(keyToolResult, e.Result))
		}
		if e.IsError {
			attrs = append(attrs, attribute.String(keyErrorType, errorTypeTool))
			t.span.SetStatus(codes.Error, "the tool's result is an error")
		}
		t.span.SetAttributes(attrs...)
	}
	measure := t.measures.ok
	if e.IsError {
		measure = []metric.RecordOption{metric.WithAttributes(attribute.String(keyOperation, operationTool), attribute.String(keyToolName, t.name), attribute.String(keyErrorType, errorTypeTool))}
	}
	t.span.End()
	if s := current.Load(); s != nil {
		s.inst.tool.Record(ctx, took, measure...)
	}
}

// The kinds of context edit (ContextEdit).
const (
	EditCleared  = "results_cleared"  // results taken out of the requests, kept in files
	EditSummary  = "summary"          // the older part stood for by a summary
	EditTooLong  = "too_long_retry"   // the provider refused a request as too long; it is made smaller and sent once more
	EditWithheld = "results_withheld" // a round's results withheld after a refusal (the refusal guard)
)

// Edit is one change the agent made to what it sends: counts and tokens,
// never what was taken out.
type Edit struct {
	Kind          string // EditCleared, EditSummary, EditTooLong, ...
	Before, After int    // the request's tokens before and after (0: not known)
	Cleared       int    // how many results (or inputs) were taken out
	Limit         int    // the window the provider said the request must fit (EditTooLong); 0: not said
}

// ContextEdit records e as an event ("myelin.context.edit") on the span
// ctx carries: the turn's.
func ContextEdit(ctx context.Context, e Edit) {
	if current.Load() == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(keyEditKind, e.Kind)}
	if e.Before > 0 {
		attrs = append(attrs, attribute.Int(keyEditBefore, e.Before))
	}
	if e.After > 0 {
		attrs = append(attrs, attribute.Int(keyEditAfter, e.After))
	}
	if e.Cleared > 0 {
		attrs = append(attrs, attribute.Int(keyEditCleared, e.Cleared))
	}
	if e.Limit > 0 {
		attrs = append(attrs, attribute.Int(keyWindowLimit, e.Limit))
	}
	span.AddEvent(contextEditEvent, trace.WithAttributes(attrs...))
}
