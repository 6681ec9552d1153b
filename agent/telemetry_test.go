package agent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/gemini"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlp"
	"github.com/myelin-run/myelin/telemetry/otlptest"
	"github.com/myelin-run/myelin/tool"
)

// recording turns telemetry on for the test, its spans recorded in memory
// and its metrics read by hand, content captured as content says; it is
// off again when the test ends.
func recording(t *testing.T, content bool) (*tracetest.SpanRecorder, *sdkmetric.ManualReader, func()) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	restore, err := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), content)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
	return rec, reader, restore
}

// probeTool records the traceparent of the context its handler runs
// under: the one an MCP HTTP call it made would send.
func probeTool(t *testing.T, seen *string) *tool.Tool {
	t.Helper()
	type in struct{}
	p, err := tool.Func("probe", "Reports nothing.", func(ctx context.Context, _ in) (any, error) {
		*seen = telemetry.TraceParent(ctx)
		return "probed", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// attrs are a span's (or event's) attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// named are the spans called name, in the order they started.
func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// wantInt fails unless span's attribute key is the int want.
func wantInt(t *testing.T, what string, a map[string]attribute.Value, key string, want int64) {
	t.Helper()
	if v, ok := a[key]; !ok || v.AsInt64() != want {
		t.Errorf("%s: %s = %v (set: %v), want %d", what, key, v.Emit(), ok, want)
	}
}

func wantString(t *testing.T, what string, a map[string]attribute.Value, key, want string) {
	t.Helper()
	if v, ok := a[key]; !ok || v.AsString() != want {
		t.Errorf("%s: %s = %q (set: %v), want %q", what, key, v.Emit(), ok, want)
	}
}

// A turn of two requests and a tool round, one of whose results spills,
// is one invoke_agent span with the two chat spans and the two
// execute_tool spans under it, each saying what the conventions ask
// (usage with the cache's tokens, the finish reason, the call id, the
// spill file) and no content; the tool's handler runs in its span's
// context; the token, duration and tool metrics are recorded.
func TestATurnIsTracedAsAnInvokeAgentSpanWithItsRequestsAndToolCalls(t *testing.T) {
	rec, reader, _ := recording(t, false)
	var traceparent string
	r := newRig(t, emitTool(t), probeTool(t, &traceparent))
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "call_big", Name: "emit", Input: `{"n":1,"chars":30000}`},
		{ID: "call_probe", Name: "probe", Input: `{}`},
	}, Input: 10, Output: 5, CacheRead: 100, CacheWrite: 20},
		providertest.Step{Text: "done", Input: 7, Output: 3, CacheRead: 130})
	r.turn("emit a big one")

	spans := rec.Ended()
	turns := named(spans, "invoke_agent myelin")
	if len(turns) != 1 {
		t.Fatalf("%d invoke_agent spans, want 1 (spans: %v)", len(turns), spanNames(spans))
	}
	turn := turns[0]
	ta := attrs(turn.Attributes())
	wantString(t, "turn", ta, "gen_ai.operation.name", "invoke_agent")
	wantString(t, "turn", ta, "gen_ai.conversation.id", r.id)
	wantString(t, "turn", ta, "gen_ai.provider.name", "anthropic")
	wantString(t, "turn", ta, "myelin.turn.reason", "end_turn")
	wantInt(t, "turn", ta, "myelin.turn.rounds", 1)
	wantInt(t, "turn", ta, "gen_ai.usage.input_tokens", 10+100+20+7+130)
	wantInt(t, "turn", ta, "gen_ai.usage.output_tokens", 8)
	if turn.SpanKind() != trace.SpanKindInternal {
		t.Errorf("the turn's span is of kind %v, want internal", turn.SpanKind())
	}

	chats := named(spans, "chat claude-test")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2 (spans: %v)", len(chats), spanNames(spans))
	}
	for i, c := range chats {
		if c.Parent().SpanID() != turn.SpanContext().SpanID() || c.SpanKind() != trace.SpanKindClient {
			t.Errorf("chat %d: parent %v kind %v, want under the turn's span, kind client", i, c.Parent().SpanID(), c.SpanKind())
		}
		a := attrs(c.Attributes())
		wantString(t, "chat", a, "gen_ai.operation.name", "chat")
		wantString(t, "chat", a, "gen_ai.request.model", "claude-test")
		wantString(t, "chat", a, "gen_ai.conversation.id", r.id)
		wantInt(t, "chat", a, "gen_ai.request.max_tokens", int64(AnswerRoom(0)))
		for _, k := range []string{"myelin.request.bytes", "myelin.window.tokens", "myelin.window.limit"} {
			if a[k].AsInt64() <= 0 {
				t.Errorf("chat %d: %s = %v, want the request's size and the window's fill", i, k, a[k].Emit())
			}
		}
	}
	first := attrs(chats[0].Attributes())
	wantInt(t, "first chat", first, "gen_ai.usage.input_tokens", 130) // the input, cached or not
	wantInt(t, "first chat", first, "gen_ai.usage.cache_read.input_tokens", 100)
	wantInt(t, "first chat", first, "gen_ai.usage.cache_creation.input_tokens", 20)
	wantInt(t, "first chat", first, "gen_ai.usage.output_tokens", 5)
	if got := first["gen_ai.response.finish_reasons"].AsStringSlice(); !slices.Equal(got, []string{"tool_use"}) {
		t.Errorf("first chat: finish reasons %q, want [tool_use]", got)
	}

	stored := lastResults(t, r.agent.Store, r.id)
	emits, probes := named(spans, "execute_tool emit"), named(spans, "execute_tool probe")
	if len(emits) != 1 || len(probes) != 1 {
		t.Fatalf("%d emit and %d probe spans, want 1 each", len(emits), len(probes))
	}
	emit := attrs(emits[0].Attributes())
	wantString(t, "emit", emit, "gen_ai.operation.name", "execute_tool")
	wantString(t, "emit", emit, "gen_ai.tool.call.id", "call_big")
	wantString(t, "emit", emit, "gen_ai.tool.name", "emit")
	if stored["call_big"].SpillPath == "" {
		t.Fatal("the big result was not spilled: the test shows nothing")
	}
	wantString(t, "emit", emit, "myelin.tool.result.spill_path", stored["call_big"].SpillPath)
	wantInt(t, "emit", emit, "myelin.tool.result.bytes", int64(len(stored["call_big"].Text)))
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if _, ok := emit[k]; ok {
			t.Errorf("emit: %s is exported without the opt-in", k)
		}
	}
	for _, s := range append(emits, probes...) {
		if s.Parent().SpanID() != turn.SpanContext().SpanID() {
			t.Errorf("%s is not under the turn's span", s.Name())
		}
	}
	if want := probes[0].SpanContext().SpanID().String(); !strings.Contains(traceparent, want) {
		t.Errorf("the probe's handler ran under traceparent %q, want its own span %s", traceparent, want)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]int64{}
	for _, dp := range histogram[int64](t, rm, "gen_ai.client.token.usage") {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		tokens[typ.AsString()] += dp.Sum
	}
	if tokens["input"] != 267 || tokens["output"] != 8 {
		t.Errorf("gen_ai.client.token.usage: %v, want input 267 and output 8", tokens)
	}
	if n := count(histogram[float64](t, rm, "gen_ai.client.operation.duration")); n != 2 {
		t.Errorf("gen_ai.client.operation.duration counted %d requests, want 2", n)
	}
	if n := count(histogram[float64](t, rm, "myelin.tool.duration")); n != 2 {
		t.Errorf("myelin.tool.duration counted %d calls, want 2", n)
	}
}

// With the opt-in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) a
// tool call's span carries what it was called with and returned.
func TestAToolSpanCarriesTheCallsContentOnlyWithTheOptIn(t *testing.T) {
	rec, _, _ := recording(t, true)
	r := newRig(t, emitTool(t))
	r.srv.Push(emitCall(1, 10), providertest.Step{Text: "done"})
	r.turn("emit a small one")
	emits := named(rec.Ended(), "execute_tool emit")
	if len(emits) != 1 {
		t.Fatalf("%d emit spans, want 1", len(emits))
	}
	a := attrs(emits[0].Attributes())
	wantString(t, "emit", a, "gen_ai.tool.call.arguments", `{"n":1,"chars":10}`)
	wantString(t, "emit", a, "gen_ai.tool.call.result", emitText(1, 10))
}

// A request refused as too long, then sent smaller, is a chat span ended
// by the error (error.type the status), and the turn's span has an event
// for the refusal's resend and one for the results cleared: counts and
// tokens, never what was cleared.
func TestContextEditsAreEventsOfTheTurnsSpan(t *testing.T) {
	rec, _, _ := recording(t, false)
	r := newRig(t, emitTool(t))
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	deadConversation(t, r, 12)
	r.srv.Push(providertest.Step{Status: 400, ErrorMessage: "prompt is too long: 14500 tokens > 11000 maximum"}, providertest.Step{Text: "back"})
	r.turn("go on again")

	spans := rec.Ended()
	turns := named(spans, "invoke_agent myelin")
	if len(turns) != 1 {
		t.Fatalf("%d turn spans, want 1", len(turns))
	}
	var kinds []string
	for _, e := range turns[0].Events() {
		if e.Name != "myelin.context.edit" {
			continue
		}
		a := attrs(e.Attributes)
		kind := a["myelin.context.edit.kind"].AsString()
		kinds = append(kinds, kind)
		switch kind {
		case telemetry.EditTooLong:
			wantInt(t, "too-long event", a, "myelin.context.tokens_before", 14500)
			wantInt(t, "too-long event", a, "myelin.window.limit", 11000)
		case telemetry.EditCleared:
			if a["myelin.context.results_cleared"].AsInt64() <= 0 || a["myelin.context.tokens_after"].AsInt64() <= 0 {
				t.Errorf("the clearing's event says %v, want how many results and the tokens after", e.Attributes)
			}
		}
		for _, kv := range e.Attributes {
			if kv.Value.Type() == attribute.STRING && strings.Contains(kv.Value.AsString(), "emit") {
				t.Errorf("a context edit event carries content: %s=%q", kv.Key, kv.Value.AsString())
			}
		}
	}
	if !slices.Equal(kinds, []string{telemetry.EditTooLong, telemetry.EditCleared}) {
		t.Errorf("the turn's context edit events are %q, want the too-long resend then the clearing", kinds)
	}
	chats := named(spans, "chat claude-test")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want the refused request and its resend", len(chats))
	}
	wantString(t, "refused chat", attrs(chats[0].Attributes()), "error.type", "400")
	if chats[0].Status().Code != codes.Error || chats[1].Status().Code == codes.Error {
		t.Errorf("the chat spans' statuses are %v and %v, want the refused one an error and its resend not", chats[0].Status(), chats[1].Status())
	}
}

// Off, a turn makes no span and its tools' contexts carry no
// traceparent.
func TestOffATurnMakesNoSpansAndCarriesNoTraceParent(t *testing.T) {
	rec, _, restore := recording(t, false)
	restore() // what was recorded up to here, nothing, is all there will be
	if telemetry.On() {
		t.Fatal("telemetry is on with nothing set up")
	}
	traceparent := "unset"
	r := newRig(t, probeTool(t, &traceparent))
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_probe", Name: "probe", Input: `{}`}}}, providertest.Step{Text: "done"})
	r.turn("probe")
	if traceparent != "" {
		t.Errorf("off, the tool's context carries traceparent %q", traceparent)
	}
	if spans := rec.Ended(); len(spans) != 0 {
		t.Errorf("off, %d spans were made: %v", len(spans), spanNames(spans))
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// histogram is the data points of the histogram name in rm; it fails the
// test when there is none.
func histogram[N int64 | float64](t *testing.T, rm metricdata.ResourceMetrics, name string) []metricdata.HistogramDataPoint[N] {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				h, ok := m.Data.(metricdata.Histogram[N])
				if !ok {
					t.Fatalf("%s is a %T", name, m.Data)
				}
				return h.DataPoints
			}
		}
	}
	t.Fatalf("no metric %s was recorded", name)
	return nil
}

func count[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) uint64 {
	var n uint64
	for _, dp := range dps {
		n += dp.Count
	}
	return n
}

// Set up from the environment as myelin's commands set it up, a turn's
// spans reach an OTLP receiver on loopback as a tree — the turn, its two
// requests and its tool call between them — with the spill file named,
// and its metrics with them.
func TestATurnsSpansReachAnOTLPReceiverAsATree(t *testing.T) {
	recv := otlptest.Start(t)
	recv.UseHTTP(t)
	shutdown, err := otlp.Setup(context.Background(), otlp.Config{Service: "myelin-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	r := newRig(t, emitTool(t))
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_big", Name: "emit", Input: `{"n":1,"chars":30000}`}}, Input: 5, Output: 2},
		providertest.Step{Text: "done", Input: 9, Output: 1})
	r.turn("emit a big one")
	if err := shutdown(context.Background()); err != nil { // flushes
		t.Fatal(err)
	}
	spans := recv.Spans()
	want := "invoke_agent myelin\n  chat claude-test\n  execute_tool emit\n  chat claude-test\n"
	if got := otlptest.Tree(spans); got != want {
		t.Fatalf("the spans received:\n%s\nwant:\n%s", got, want)
	}
	spill := lastResults(t, r.agent.Store, r.id)["call_big"].SpillPath
	for _, s := range spans {
		if s.Name == "execute_tool emit" && (s.Attributes["myelin.tool.result.spill_path"] != spill || spill == "") {
			t.Errorf("the tool's span names spill file %v, want %q", s.Attributes["myelin.tool.result.spill_path"], spill)
		}
		if s.Name == "chat claude-test" && s.Kind != "client" {
			t.Errorf("a chat span is of kind %s, want client", s.Kind)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "myelin.tool.duration"} {
		if _, err := recv.WaitMetric(ctx, m); err != nil {
			t.Error(err)
		}
	}
}

// Each retry of a request is an event of its chat span, and still a Retry
// event of the turn: the span's observer passes each notice on. The
// request that failed in the end ends its span with the failure.
func TestEachRetryIsAnEventOfTheRequestsSpanAndStillOfTheTurn(t *testing.T) {
	rec, _, _ := recording(t, false)
	addr := providertest.ClosedAddr(t)
	mk := func(url string) (provider.Provider, error) {
		return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: 2, RetryDelay: time.Millisecond})
	}
	a := unreachedAgent(t, mk, "http://"+addr, newDeletingStore())
	a.Model = "gemini-test"
	id, err := a.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	turnRetries := 0
	if _, err := a.Turn(context.Background(), id, "hi", func(e Event) {
		if e.Kind == Retry {
			turnRetries++
		}
	}); err == nil {
		t.Fatal("the turn did not fail: the provider cannot be reached")
	}
	if turnRetries != 2 {
		t.Errorf("the turn had %d Retry events, want 2", turnRetries)
	}
	chats := named(rec.Ended(), "chat gemini-test")
	if len(chats) != 1 {
		t.Fatalf("%d chat spans, want 1", len(chats))
	}
	var attempts []int64
	for _, e := range chats[0].Events() {
		if e.Name == "myelin.provider.retry" {
			attempts = append(attempts, attrs(e.Attributes)["myelin.retry.attempt"].AsInt64())
		}
	}
	if !slices.Equal(attempts, []int64{2, 3}) {
		t.Errorf("the chat span's retry events name attempts %v, want [2 3]", attempts)
	}
	a2 := attrs(chats[0].Attributes())
	wantString(t, "chat", a2, "gen_ai.provider.name", "gcp.gemini")
	if chats[0].Status().Code != codes.Error || a2["error.type"].AsString() == "" {
		t.Errorf("the failed request's span: status %v, error.type %q; want an error", chats[0].Status(), a2["error.type"].AsString())
	}
}
