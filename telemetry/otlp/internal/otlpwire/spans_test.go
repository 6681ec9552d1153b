package otlpwire

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// everyKind is an attribute of each value kind attribute v1.43 has, with the
// edge values of each (zero, negative, NaN, -0, empty slices, EMPTY).
func everyKind() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool("bool.true", true),
		attribute.Bool("bool.false", false),
		attribute.Int64("int.zero", 0),
		attribute.Int64("int.negative", -42),
		attribute.Int64("int.max", math.MaxInt64),
		attribute.Float64("float.zero", 0),
		attribute.Float64("float.negzero", math.Copysign(0, -1)),
		attribute.Float64("float.nan", math.NaN()),
		attribute.Float64("float.inf", math.Inf(-1)),
		attribute.Float64("float.pi", math.Pi),
		attribute.String("string.empty", ""),
		attribute.String("string.text", "héllo ✓"),
		attribute.String("string.long", strings.Repeat("x", 300)),
		attribute.BoolSlice("bools", []bool{true, false, true}),
		attribute.BoolSlice("bools.empty", []bool{}),
		attribute.Int64Slice("ints", []int64{0, -1, 1 << 40}),
		attribute.Float64Slice("floats", []float64{0, -1.5, math.NaN()}),
		attribute.StringSlice("strings", []string{"", "a", strings.Repeat("y", 200)}),
		attribute.StringSlice("strings.empty", nil),
		{Key: "empty.value"}, // attribute.EMPTY
		attribute.String("", "empty key"),
	}
}

var (
	traceA = trace.TraceID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}
	traceB = trace.TraceID{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1, 0xf0}
	base   = time.Date(2026, 12, 7, 11, 0, 0, 123456789, time.UTC)
)

// spanContext is a span context of trace tid and span sid, sampled or not,
// remote or not, with trace state ts ("" for none).
func spanContext(t testing.TB, tid trace.TraceID, sid byte, sampled, remote bool, ts string) trace.SpanContext {
	t.Helper()
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0, 0, 0, 0, 0, 0, 0, sid}, Remote: remote}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	if ts != "" {
		state, err := trace.ParseTraceState(ts)
		if err != nil {
			t.Fatalf("ParseTraceState(%q): %v", ts, err)
		}
		cfg.TraceState = state
	}
	return trace.NewSpanContext(cfg)
}

// fixtureSpans is spans covering every field AppendSpans writes: three
// resources (one nil) and several scopes per resource, interleaved, as
// stubs, plus spans recorded by the SDK's own span implementation.
func fixtureSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	resA := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "myelin"), attribute.Int64("pid", 4242),
		attribute.StringSlice("host.ips", []string{"127.0.0.1", "::1"}))
	resB := resource.NewSchemaless(everyKind()...)
	scopeFull := instrumentation.Scope{Name: "myelin/agent", Version: "v1.2.3",
		SchemaURL:  "https://opentelemetry.io/schemas/1.24.0",
		Attributes: attribute.NewSet(attribute.String("scope.attr", "v"), attribute.Bool("b", true))}
	scopeName := instrumentation.Scope{Name: "myelin/tool"}
	scopeOtherVersion := instrumentation.Scope{Name: "myelin/tool", Version: "v2"}

	stubs := []tracetest.SpanStub{{
		Name:        "full",
		SpanContext: spanContext(t, traceA, 1, true, false, "vendor=value,other=x"),
		Parent:      spanContext(t, traceA, 2, true, true, ""),
		SpanKind:    trace.SpanKindServer,
		StartTime:   base,
		EndTime:     base.Add(1500 * time.Millisecond),
		Attributes:  everyKind(),
		Events: []sdktrace.Event{
			{Name: "event.one", Time: base.Add(time.Millisecond), Attributes: everyKind(), DroppedAttributeCount: 3},
			{Name: "", Time: time.Time{}},
		},
		Links: []sdktrace.Link{
			{SpanContext: spanContext(t, traceB, 9, true, true, "k=v"), Attributes: []attribute.KeyValue{attribute.String("link", "remote")}, DroppedAttributeCount: 1},
			{SpanContext: spanContext(t, traceB, 10, false, false, "")},
		},
		Status:               sdktrace.Status{Code: codes.Error, Description: "it broke"},
		DroppedAttributes:    7,
		DroppedEvents:        math.MaxInt32,
		DroppedLinks:         math.MaxInt, // clamped to MaxUint32 where int is 64 bits
		Resource:             resA,
		InstrumentationScope: scopeFull,
	}, {
		Name:                 "local parent, client",
		SpanContext:          spanContext(t, traceA, 3, false, false, ""),
		Parent:               spanContext(t, traceA, 1, true, false, ""),
		SpanKind:             trace.SpanKindClient,
		StartTime:            base,
		EndTime:              base,
		Status:               sdktrace.Status{Code: codes.Ok},
		Resource:             resB,
		InstrumentationScope: scopeName,
	}, {
		Name:                 "no scope, no parent, producer",
		SpanContext:          spanContext(t, traceB, 4, true, false, ""),
		SpanKind:             trace.SpanKindProducer,
		StartTime:            time.Unix(-5, 0), // before the epoch: 0
		Resource:             resA,
		InstrumentationScope: instrumentation.Scope{},
	}, {
		Name:                 "nil resource, consumer",
		SpanContext:          spanContext(t, traceB, 5, false, true, ""),
		SpanKind:             trace.SpanKindConsumer,
		Status:               sdktrace.Status{Code: codes.Unset, Description: "ignored by the SDK, kept here"},
		InstrumentationScope: scopeName,
	}, {
		Name:                 "same name, other version; unknown kind",
		SpanContext:          spanContext(t, traceA, 6, true, false, ""),
		SpanKind:             trace.SpanKind(99),
		Resource:             resB,
		InstrumentationScope: scopeOtherVersion,
		Status:               sdktrace.Status{Code: codes.Code(7)},
		DroppedAttributes:    -1,
	}, {
		Name:                 "back to the first scope",
		SpanContext:          spanContext(t, traceA, 7, true, false, ""),
		SpanKind:             trace.SpanKindInternal,
		Resource:             resA,
		InstrumentationScope: scopeFull,
		Attributes:           []attribute.KeyValue{attribute.String("big", strings.Repeat("z", 20000))},
	}, {
		Name:        "resA's attributes, another schema: resA's group and schema",
		SpanContext: spanContext(t, traceA, 8, true, false, ""),
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.99.0",
			attribute.String("service.name", "myelin"), attribute.Int64("pid", 4242),
			attribute.StringSlice("host.ips", []string{"127.0.0.1", "::1"})),
		InstrumentationScope: instrumentation.Scope{Name: "myelin/agent", Version: "v1.2.3",
			SchemaURL: "https://opentelemetry.io/schemas/1.24.0"}, // scopeFull without attributes: its own group
	}}
	var spans []sdktrace.ReadOnlySpan
	for _, s := range stubs {
		spans = append(spans, s.Snapshot())
	}
	spans = append(spans, nil)
	return append(spans, recordedSpans(resA)...)
}

// recordedSpans is spans made and ended through the SDK with resource res.
func recordedSpans(res *resource.Resource) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("myelin/recorded", trace.WithInstrumentationVersion("v0.1"),
		trace.WithInstrumentationAttributes(attribute.String("recorded", "yes")))
	ctx, parent := tr.Start(context.Background(), "recorded parent", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.Int64("n", 1)))
	_, child := tr.Start(ctx, "recorded child", trace.WithLinks(trace.LinkFromContext(ctx, attribute.Bool("l", true))))
	child.AddEvent("step", trace.WithAttributes(attribute.Float64("f", 0.5)))
	child.SetStatus(codes.Error, "child failed")
	child.RecordError(context.Canceled)
	child.End()
	parent.End()
	return rec.Ended()
}

func TestAppendSpansIsTheOfficialExportersRequest(t *testing.T) {
	spans := fixtureSpans(t)
	official, err := newOfficialTracer(t).export(t, spans)
	if err != nil {
		t.Fatalf("official exporter: %v", err)
	}
	requireSameTraceRequest(t, AppendSpans(nil, spans), official)
}

func TestAppendSpansGroupsResourcesInTheOrderTheirFirstSpanComes(t *testing.T) {
	spans := fixtureSpans(t)
	b := AppendSpans(nil, spans)
	var got []string
	for _, rec := range splitFields(t, b) {
		// The first span name in each resource group.
		got = append(got, firstSpanName(t, rec))
	}
	want := []string{"full", "local parent, client", "nil resource, consumer"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("resource groups begin with %q, want %q", got, want)
	}
}

func TestAppendSpansAppendsToDst(t *testing.T) {
	spans := fixtureSpans(t)
	want := AppendSpans(nil, spans)
	got := AppendSpans([]byte("prefix"), spans)
	if string(got) != "prefix"+string(want) {
		t.Fatalf("AppendSpans(prefix) did not keep the prefix and append the request")
	}
}

func TestAppendSpansOfNoSpanIsTheEmptyRequestAndTheOfficialSendsNothing(t *testing.T) {
	for _, spans := range [][]sdktrace.ReadOnlySpan{nil, {nil}} {
		if got := AppendSpans(nil, spans); len(got) != 0 {
			t.Errorf("AppendSpans(%d nil spans) = %x, want nothing", len(spans), got)
		}
		body, err := newOfficialTracer(t).export(t, spans)
		if err != nil || body != nil {
			t.Errorf("official exporter of %d nil spans: posted %x, %v; want nothing", len(spans), body, err)
		}
	}
}
