// Package providertest is a scripted provider for tests: a loopback HTTP
// server that speaks a provider's wire format (Anthropic Messages, also as
// Amazon Bedrock, Google Vertex AI and Claude on Google Cloud serve it;
// OpenAI Chat Completions, the OpenAI Responses API, the Gemini API), answers
// each request with the next step of a script, and records the requests it
// got, byte for byte.
//
// Like a real provider it can have a context window (Server.Window): a
// request that does not fit is refused with the provider's own error, and
// takes no step. With a window or Server.Cache set, a step that declares no
// usage is answered with usage the server works out: the request's tokens
// (Tokens: its Canonical bytes / 4) and, as cache read, the longest prefix
// it shares with one of the last 8 requests answered. Server.Respond
// answers whatever the script has no step for, and Stats sums it all up.
// These are measures for tests, chosen to be simple and exact; they are not
// a provider's tokenizer nor its cache (Anthropic caches at its markers,
// OpenAI in 128-token blocks from 1,024), and must not be read as such.
//
// It is for tests only: it must not be used to reach a real provider, and
// it listens on 127.0.0.1 alone.
package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// ToolCall is a tool call a step makes the model ask for.
type ToolCall struct {
	ID, Name string
	// Input is the arguments as the model sends them; it may be invalid
	// JSON, to test what the agent does with that.
	Input string
}

// Step is one scripted answer.
type Step struct {
	Text      string
	ToolCalls []ToolCall
	// Usage reported: input, output, cache read, cache write tokens.
	Input, Output, CacheRead, CacheWrite int
	// CacheWrite1h, above 0, is how many of CacheWrite were written to
	// the one-hour cache: the Anthropic family's answers (streamed and
	// whole, on every platform) then break the writes down in
	// usage.cache_creation, the rest as five-minute ones. At 0 they carry
	// no breakdown, as before it existed.
	CacheWrite1h int
	// Status, when not 0 or 200, answers with that status and an error
	// body holding ErrorMessage; the step is used once like any other.
	Status       int
	ErrorMessage string
	// Raw, when set, is sent as the whole response body (with the
	// event-stream content type when the request streamed).
	Raw string
	// Cut, with Raw, drops the connection after sending Raw.
	Cut bool
	// CutAfter, when above 0 on a streamed answer, sends only the first
	// CutAfter events of the step's stream, then drops the connection: an
	// answer cut mid-stream.
	CutAfter int
	// Hold, when set, is waited on before answering (to test
	// cancellation and crashes mid-request).
	Hold chan struct{}
	// Stall, when set with CutAfter, keeps the connection open after the
	// first CutAfter events instead of dropping it: they are flushed and
	// the answer waits on Stall, then ends there (to test a request
	// cancelled mid-stream).
	Stall chan struct{}
	// Thinking are, on Anthropic, the answer's thinking and
	// redacted_thinking blocks (see Thinking for where each goes),
	// streamed with the API's events (thinking_delta, signature_delta).
	Thinking []Thinking

	// GeminiThought, on Gemini, is a thought summary part the answer
	// starts with (thought: true).
	GeminiThought string
	// GeminiSignature, on Gemini, is the thoughtSignature the answer
	// carries (base64); "" has the server make one up (see NewGemini).
	GeminiSignature string
	// Reasoning, on the Responses API (NewResponses), makes the answer
	// start with a reasoning item whose encrypted_content is
	// Encrypted(Reasoning) and whose summary, when the request asks for
	// one, is Reasoning.
	Reasoning string
	// Refuse ends the answer (its Text, its calls if any) with the wire's
	// refusal: Anthropic's stop_reason "refusal" (on Bedrock, Vertex and
	// the Google Cloud gateway too), Chat Completions' finish_reason
	// "content_filter", Gemini's finishReason "SAFETY", and on the
	// Responses API a response "incomplete" for "content_filter"
	// (streamed: a response.incomplete event in place of
	// response.completed).
	Refuse bool
}

// Server is a scripted provider. Window, Cache and Respond are set after
// New* and before the first request; they must not be changed while
// requests are served.
type Server struct {
	URL string // the base URL to point a client at

	// Window, when above 0, is the context window in tokens: a request
	// whose Tokens (N) plus its answer's room (B: max_tokens; on OpenAI
	// max_completion_tokens, else max_tokens; on the Responses API
	// max_output_tokens) pass it (W) is refused as
	// the provider refuses it, a 400 invalid_request_error, with the
	// provider's own words:
	//
	//   - Anthropic, N > W: "prompt is too long: N tokens > W maximum";
	//     N ≤ W: "input length and `max_tokens` exceed context limit:
	//     N + B > W, decrease input length or `max_tokens` and try again".
	//   - OpenAI, param "messages", code "context_length_exceeded", N > W:
	//     "This model's maximum context length is W tokens. However, your
	//     messages resulted in N tokens. Please reduce the length of the
	//     messages."; N ≤ W: "This model's maximum context length is W
	//     tokens. However, you requested N+B tokens (N in the messages, B
	//     in the completion). Please reduce the length of the messages or
	//     completion."
	//   - The Responses API, code "context_length_exceeded", param "input",
	//     whatever the counts: "Your input exceeds the context window of
	//     this model. Please adjust your input and try again." — a 400 when
	//     not streamed; streamed, a 200 whose stream sends response.created
	//     and response.in_progress, then an error event holding it.
	//
	// A refused request is recorded in Requests, counted in Refused, and
	// takes no step.
	Window int
	// Cache, or a Window above 0, makes the server work out the usage of
	// each answer whose step declares none (Input, Output, CacheRead and
	// CacheWrite all 0): the cache read is the longest prefix, in tokens
	// (bytes / 4, rounded down), the request's Canonical form shares with
	// one of the last 8 requests answered; the input is the rest of its
	// Tokens; no cache write; the output is the step's text, thinking and
	// tool calls in bytes / 4, plus one. On OpenAI, prompt_tokens is the
	// whole and cached_tokens the cache read. A step that declares usage is answered
	// with it as it is; a Raw step's body says what it says.
	Cache bool
	// Respond, when set, answers every request the script has no step
	// for (the steps go first). It is called with no lock held, once per
	// such request, and concurrently when requests are; it may call the
	// Server's methods.
	Respond func(Request) Step
	// CheckThinking, on Anthropic, refuses as the Messages API does (a 400
	// invalid_request_error with its words, MissingThinking or
	// InvalidSignature) a request holding a thinking block the server did
	// not send as it is, and, with thinking on, a request ending in tool
	// results whose assistant message lacks the thinking blocks its answer
	// had. A refused request is recorded in Requests and takes no step.
	CheckThinking bool

	t      testing.TB
	srv    *httptest.Server
	wire   string
	mu     sync.Mutex
	steps  []Step
	reqs   [][]byte
	paths  []string
	recent [][]byte // the Canonical forms of the last answered requests
	stats  Stats
	sent   sentThinking // the thinking blocks sent, for CheckThinking
	gemini geminiState  // the signatures given, on Gemini
	// gateway puts the Google Cloud gateway's door in front of the
	// Anthropic fake (NewGoogleCloud, googlecloud.go).
	gateway bool
}

// NewAnthropic starts a fake Anthropic Messages server. t may be nil (in a
// runnable example); then the caller closes the server.
func NewAnthropic(t testing.TB, steps ...Step) *Server { return start(t, "anthropic", steps) }

// NewOpenAI starts a fake OpenAI Chat Completions server.
func NewOpenAI(t testing.TB, steps ...Step) *Server { return start(t, "openai", steps) }

func start(t testing.TB, wire string, steps []Step) *Server {
	s := &Server{t: t, wire: wire, steps: steps}
	if wire == googleCloudWire { // the Anthropic fake behind the gateway's door
		s.wire, s.gateway = "anthropic", true
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if s.gateway {
		s.URL += GoogleCloudPath
	}
	if wire == "openai" || wire == responsesWire {
		s.URL += "/v1"
	}
	if t != nil {
		t.Cleanup(s.srv.Close)
	}
	return s
}

// Close stops the server; with a testing.TB it is done at cleanup.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) fatalf(format string, args ...any) {
	if s.t == nil {
		panic(fmt.Sprintf(format, args...))
	}
	s.t.Helper()
	s.t.Fatalf(format, args...)
}

// Push adds steps to the end of the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Ready orders the settings made since the server started (Window,
// Cache, CheckThinking, Respond) before its handlers read them, as the
// race detector sees it: a test whose requests come from another process
// (a built binary) has no other order between its writes and the
// handlers' reads. It takes the server's lock, which the handlers take
// to read them.
func (s *Server) Ready() {
	s.mu.Lock()
	defer s.mu.Unlock()
}

// Forget drops the bodies and paths of the requests received so far, as
// if none had been: for a long benchmark, whose fake would otherwise keep
// every body it was sent. The script, the stats and what Cache and
// CheckThinking remember stay.
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs, s.paths = nil, nil
}

// Requests returns the bodies of the requests received so far, in order.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// Request returns the body of request i decoded as JSON.
func (s *Server) Request(i int) map[string]any {
	reqs := s.Requests()
	if i >= len(reqs) {
		s.fatalf("providertest: request %d asked for, %d received", i, len(reqs))
	}
	var v map[string]any
	if err := json.Unmarshal(reqs[i], &v); err != nil {
		s.fatalf("providertest: request %d is not JSON: %v", i, err)
	}
	return v
}

// Refused is how many requests were refused for not fitting Window.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.Refused
}

// Stats returns the totals over the requests received so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if s.gateway && refusedAtGateway(w, r, body) {
		return
	}
	step, m, measure, ok := s.next(w, r, body)
	if !ok {
		return
	}
	if step.Hold != nil {
		select {
		case <-step.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if step.Status == 0 || step.Status == http.StatusOK {
		step = s.answered(m, step, measure)
		if s.wire == "anthropic" {
			s.mu.Lock()
			s.remember(step)
			s.mu.Unlock()
		}
	}
	s.answer(w, r, body, step)
}

// next records request body and decides what answers it: a refusal the
// wire's provider would give (over the window, a thinking or Gemini or
// Responses rule broken), written here with ok false, or the script's
// next step (or Respond's). measured is the body's size when the server
// measures requests (Window, Cache), which measure says.
func (s *Server) next(w http.ResponseWriter, r *http.Request, body []byte) (step Step, m measured, measure bool, ok bool) {
	// Window, Cache and Respond are set before the first request; read
	// under the lock, so that a test that took it since setting them
	// (Ready) has them seen here by the race detector too, when the
	// request comes from another process
	s.mu.Lock()
	window, respond, checkThinking, cache := s.Window, s.Respond, s.CheckThinking, s.Cache
	s.mu.Unlock()
	measure = window > 0 || cache
	if measure {
		m = measureBody(body)
	}
	s.mu.Lock()
	index := len(s.reqs)
	s.reqs = append(s.reqs, body)
	s.paths = append(s.paths, r.URL.Path)
	refused := refusal(s.wire, window, m.tokens(), m.room)
	if refused == "" && checkThinking && s.wire == "anthropic" {
		if msg := s.thinkingRefusal(body); msg != "" {
			refused = s.errorBody(Step{Status: http.StatusBadRequest, ErrorMessage: msg})
		}
	}
	if refused == "" && s.wire == "gemini" {
		if msg := s.gemini.check(body); msg != "" {
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, geminiError(http.StatusBadRequest, msg))
			return Step{}, m, measure, false
		}
	}
	if refused != "" {
		s.stats.Refused++
		s.mu.Unlock()
		if s.wire == responsesWire {
			writeResponsesRefusal(w, readResponsesRequest(body).Stream)
			return Step{}, m, measure, false
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_providertest")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, refused)
		return Step{}, m, measure, false
	}
	if bad := s.responsesRefused(body); bad != "" {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, bad)
		return Step{}, m, measure, false
	}
	ok = len(s.steps) > 0
	if ok {
		step, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	if !ok && respond != nil {
		if !measure {
			m = measureBody(body)
		}
		step, ok = respond(newRequest(index, body, m)), true
	}
	if !ok {
		http.Error(w, `{"error":{"type":"api_error","message":"providertest: the script has no more steps"}}`, http.StatusInternalServerError)
		return Step{}, m, measure, false
	}
	return step, m, measure, true
}

// answer writes step as the wire answers: an error status, raw bytes, a
// stream cut after some events, or the wire's own stream or whole answer.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	switch s.wire { // the cloud platforms answer in their own files
	case "bedrock":
		s.answerBedrock(w, r, body, step)
		return
	case "vertex":
		s.answerVertex(w, r, body, step)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	if s.wire == "gemini" { // the method says it, not the body
		req.Stream = strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	}
	if step.Status != 0 && step.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "5")
		w.WriteHeader(step.Status)
		fmt.Fprint(w, s.errorBody(step))
		return
	}
	if step.Raw != "" {
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, step.Raw)
		if step.Cut {
			cut(w)
		}
		return
	}
	if s.wire == responsesWire {
		s.serveResponses(w, body, step)
		return
	}
	if step.CutAfter > 0 && req.Stream {
		stream := AnthropicStream(step)
		switch s.wire {
		case "openai":
			stream = OpenAIStream(step)
		case "gemini":
			stream = s.geminiAnswer(step, true)
		}
		events := strings.SplitAfter(stream, "\n\n")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.Join(events[:min(step.CutAfter, len(events))], ""))
		endCut(w, step)
		return
	}
	switch {
	case s.wire == "gemini":
		w.Header().Set("Content-Type", map[bool]string{true: "text/event-stream", false: "application/json"}[req.Stream])
		io.WriteString(w, s.geminiAnswer(step, req.Stream))
	case s.wire == "anthropic" && req.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, AnthropicStream(step))
	case s.wire == "anthropic":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicMessage(step))
	case req.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, OpenAIStream(step))
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, openAICompletion(step))
	}
}

// answered counts an answered request in the stats and, when measure is
// set (Window or Cache), measures it: it compares its canonical form with
// the remembered ones (counting a break), remembers it, and gives a step
// that declares no usage the usage worked out. Without measure the server
// does no more work per request than it did before it could measure.
func (s *Server) answered(m measured, step Step, measure bool) Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	if measure {
		canon, total := m.canon, m.tokens()
		read, of := cached(canon, s.recent)
		read = min(read, total)
		if len(s.recent) > 0 && 2*read < of {
			s.stats.Breaks++
		}
		if len(s.recent) == remembered {
			copy(s.recent, s.recent[1:])
			s.recent = s.recent[:remembered-1]
		}
		s.recent = append(s.recent, canon)
		s.stats.Largest = max(s.stats.Largest, total)
		if !usageSet(step) && step.Raw == "" { // a Raw body reports its own
			step.Input, step.CacheRead, step.Output = total-read, read, outputTokens(step)
		}
	}
	s.stats.Requests++
	s.stats.Input += step.Input + step.CacheRead + step.CacheWrite
	s.stats.CacheRead += step.CacheRead
	s.stats.Output += step.Output
	return step
}

// cut sends what was written and drops the connection.
// endCut ends an answer cut after its CutAfter events: the connection
// dropped (cut), or with Stall held open, what was written flushed, until
// Stall is closed.
func endCut(w http.ResponseWriter, step Step) {
	if step.Stall == nil {
		cut(w)
		return
	}
	w.(http.Flusher).Flush()
	<-step.Stall
}

func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		w.(http.Flusher).Flush()
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

func (s *Server) errorBody(step Step) string {
	msg := step.ErrorMessage
	if msg == "" {
		msg = http.StatusText(step.Status)
	}
	if s.wire == "gemini" {
		return geminiError(step.Status, msg)
	}
	if s.wire == "anthropic" {
		return anthropicError(step)
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func sse(b *strings.Builder, event string, data any) {
	if event != "" {
		fmt.Fprintf(b, "event: %s\n", event)
	}
	fmt.Fprintf(b, "data: %s\n\n", mustJSON(data))
}

// AnthropicStream is the event stream of a step's answer.
func AnthropicStream(step Step) string {
	var b strings.Builder
	sse(&b, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(step, 1),
	}})
	for i, blk := range anthropicBlocks(step) {
		switch {
		case blk.thinking != nil:
			streamThinking(&b, i, *blk.thinking)
		case blk.call != nil:
			c := blk.call
			sse(&b, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			sse(&b, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.Input}})
			sse(&b, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		default:
			sse(&b, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			// two deltas, to exercise streaming
			for _, part := range halves(blk.text) {
				sse(&b, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": part}})
			}
			sse(&b, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
	}
	sse(&b, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(step, "refusal", "tool_use", "end_turn"), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": step.Output}})
	sse(&b, "message_stop", map[string]any{"type": "message_stop"})
	return b.String()
}

// stopReason is the wire's word for why step's answer ended: refusal
// when the step refuses (Step.Refuse), tools when it calls, else end.
func stopReason(step Step, refusal, tools, end string) string {
	if step.Refuse {
		return refusal
	}
	if len(step.ToolCalls) > 0 {
		return tools
	}
	return end
}

func anthropicMessage(step Step) string {
	content := []any{}
	for _, blk := range anthropicBlocks(step) {
		switch {
		case blk.thinking != nil:
			content = append(content, blk.thinking.wholeBlock())
		case blk.call != nil:
			c := blk.call
			var input any = map[string]any{}
			_ = json.Unmarshal([]byte(c.Input), &input)
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		default:
			content = append(content, map[string]any{"type": "text", "text": blk.text})
		}
	}
	return mustJSON(map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model", "content": content,
		"stop_reason": stopReason(step, "refusal", "tool_use", "end_turn"), "stop_sequence": nil,
		"usage": anthropicUsage(step, step.Output),
	})
}

// anthropicUsage is the usage an Anthropic answer to step reports, with
// output tokens: the cache writes broken down by lifetime when step has
// one-hour writes (Step.CacheWrite1h).
func anthropicUsage(step Step, output int) map[string]any {
	u := map[string]any{"input_tokens": step.Input, "output_tokens": output, "cache_read_input_tokens": step.CacheRead, "cache_creation_input_tokens": step.CacheWrite}
	if step.CacheWrite1h > 0 {
		u["cache_creation"] = map[string]any{"ephemeral_5m_input_tokens": step.CacheWrite - step.CacheWrite1h, "ephemeral_1h_input_tokens": step.CacheWrite1h}
	}
	return u
}

// OpenAIStream is the chunk stream of a step's answer, usage in the last
// chunk.
func OpenAIStream(step Step) string {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		sse(&b, "", map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if step.Text != "" {
		chunk(map[string]any{"content": step.Text}, nil)
	}
	for i, c := range step.ToolCalls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Input}}}}, nil)
	}
	chunk(map[string]any{}, stopReason(step, "content_filter", "tool_calls", "stop"))
	sse(&b, "", map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test-model", "choices": []any{},
		"usage": openAIUsage(step)})
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func openAIUsage(step Step) map[string]any {
	return map[string]any{"prompt_tokens": step.Input + step.CacheRead, "completion_tokens": step.Output, "total_tokens": step.Input + step.CacheRead + step.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": step.CacheRead}}
}

func openAICompletion(step Step) string {
	msg := map[string]any{"role": "assistant", "content": step.Text}
	var calls []any
	for _, c := range step.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Input}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	return mustJSON(map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": stopReason(step, "content_filter", "tool_calls", "stop")}},
		"usage":   openAIUsage(step)})
}

// StripCacheMarks removes every cache_control from a decoded request, so
// that two requests can be compared "cache markers aside".
func StripCacheMarks(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "cache_control")
		for k, x := range v {
			v[k] = StripCacheMarks(x)
		}
	case []any:
		for i, x := range v {
			v[i] = StripCacheMarks(x)
		}
	}
	return v
}

// Golden compares got with the golden file at path, byte for byte, or
// rewrites the file when update is set (a test's -update flag).
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s changed:\n got %s\nwant %s", path, got, want)
	}
}

// ClosedAddr is a loopback address nothing listens on (a port listened
// on, then closed): a provider there cannot be reached, its connections
// refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
