package tool

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/myelin-run/myelin/telemetry"
)

// Every call of a round has its execute_tool span, under the round's: a
// call that runs has it in its handler's context (so that an MCP HTTP
// request it makes carries its traceparent), through Round and Run alike,
// and a call settled unrun (an unknown tool) has one that says it failed.
func TestEveryCallOfARoundHasItsSpanAndItsHandlerRunsUnderIt(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore, err := telemetry.Use(tp, noop.NewMeterProvider(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	reg := &Registry{}
	seen := map[string]trace.SpanID{}
	if err := reg.Add(MustFunc("span", "Says its span.", func(ctx context.Context, _ struct{}) (any, error) {
		return trace.SpanContextFromContext(ctx).SpanID().String(), nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, round := tp.Tracer("test").Start(context.Background(), "round")
	d := &Dispatcher{Tools: reg}
	outs := d.Round(ctx, []Call{{ID: "call_a", Name: "span"}, {ID: "call_x", Name: "nothing"}})
	res := d.Run(ctx, []Call{{ID: "call_b", Name: "span"}})
	round.End()
	texts := map[string]string{"call_a": outs[0].Text, "call_b": res[0].Data.(string)}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.tool.call.id" {
				spans[kv.Value.AsString()] = s
				seen[kv.Value.AsString()] = s.SpanContext().SpanID()
			}
		}
	}
	for _, id := range []string{"call_a", "call_x", "call_b"} {
		s, ok := spans[id]
		if !ok {
			t.Fatalf("call %s has no span (spans by call: %v)", id, seen)
		}
		if s.Parent().SpanID() != round.SpanContext().SpanID() {
			t.Errorf("call %s's span is not under the round's", id)
		}
	}
	for id, text := range texts {
		if text != seen[id].String() {
			t.Errorf("call %s's handler ran under span %q, want its own %s", id, text, seen[id])
		}
	}
	x := spans["call_x"]
	if x.Name() != "execute_tool nothing" || x.Status().Code != codes.Error || !hasAttr(x.Attributes(), "myelin.tool.result.is_error", attribute.BoolValue(true)) {
		t.Errorf("the unknown tool's span is %q, status %v, attributes %v: want it to say the call failed", x.Name(), x.Status(), x.Attributes())
	}
}

func hasAttr(kvs []attribute.KeyValue, key string, v attribute.Value) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value == v {
			return true
		}
	}
	return false
}
