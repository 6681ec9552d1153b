package otlpwire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// benchSpans is n spans shaped like an agent's: one resource, two scopes,
// eight attributes each, an event on every fourth, a link on every eighth.
func benchSpans(n int) []sdktrace.ReadOnlySpan {
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "myelin"), attribute.String("service.version", "v0.9.0"),
		attribute.String("host.name", "builder"), attribute.Int64("process.pid", 4242),
		attribute.String("telemetry.sdk.language", "go"))
	scopes := []instrumentation.Scope{{Name: "myelin/agent", Version: "v0.9.0"}, {Name: "myelin/tool", Version: "v0.9.0"}}
	spans := make([]sdktrace.ReadOnlySpan, n)
	for i := range spans {
		tid := trace.TraceID{byte(i >> 8), byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i >> 8), byte(i), 1}, TraceFlags: trace.FlagsSampled})
		parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i >> 8), byte(i), 2}, TraceFlags: trace.FlagsSampled})
		s := tracetest.SpanStub{
			Name: "chat claude-sonnet", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindClient,
			StartTime: base.Add(time.Duration(i) * time.Millisecond), EndTime: base.Add(time.Duration(i+40) * time.Millisecond),
			Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.system", "anthropic"),
				attribute.String("gen_ai.request.model", "claude-sonnet-4"), attribute.Int64("gen_ai.usage.input_tokens", int64(1000+i)),
				attribute.Int64("gen_ai.usage.output_tokens", int64(200+i)), attribute.Float64("gen_ai.request.temperature", 0.7),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{"end_turn"}),
				attribute.String("myelin.session", fmt.Sprintf("session-%06d", i/16)),
			},
			Status: sdktrace.Status{Code: codes.Ok}, Resource: res, InstrumentationScope: scopes[i%2],
		}
		if i%4 == 0 {
			s.Events = []sdktrace.Event{{Name: "retry", Time: s.StartTime, Attributes: []attribute.KeyValue{attribute.Int64("attempt", 2), attribute.String("reason", strings.Repeat("r", 40))}}}
		}
		if i%8 == 0 {
			s.Links = []sdktrace.Link{{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.String("link", "cause")}}}
		}
		spans[i] = s.Snapshot()
	}
	return spans
}

func BenchmarkAppendSpans512(b *testing.B) {
	spans := benchSpans(512)
	b.Run("reused buffer", func(b *testing.B) {
		buf := AppendSpans(nil, spans)
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendSpans(buf[:0], spans)
		}
	})
	b.Run("new buffer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = AppendSpans(nil, spans)
		}
	})
}

// BenchmarkOfficialMarshal512 is the floor of the official path: proto.Marshal
// of the request already transformed (the transform's own work not counted).
func BenchmarkOfficialMarshal512(b *testing.B) {
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(AppendSpans(nil, benchSpans(512)), &req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := proto.Marshal(&req); err != nil {
			b.Fatal(err)
		}
	}
}

// discard is an http.RoundTripper that answers 200 to every request without
// a network: the official exporter's whole path (transform, marshal, request)
// without a socket's noise.
type discard struct{}

func (discard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// BenchmarkOfficialExporter512 is the official otlptracehttp exporter's
// ExportSpans to an in-memory transport: transform, marshal and request.
func BenchmarkOfficialExporter512(b *testing.B) {
	spans := benchSpans(512)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL("http://127.0.0.1:1/v1/traces"),
		otlptracehttp.WithHTTPClient(&http.Client{Transport: discard{}}),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	b.ReportAllocs()
	for b.Loop() {
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			b.Fatal(err)
		}
	}
}

// The bench spans are a request like the official one (else the benchmark
// would measure something else).
func TestBenchSpansAreTheOfficialExportersRequest(t *testing.T) {
	spans := benchSpans(64)
	official, err := newOfficialTracer(t).export(t, spans)
	if err != nil {
		t.Fatal(err)
	}
	requireSameTraceRequest(t, AppendSpans(nil, spans), official)
}

func BenchmarkAppendMetrics(b *testing.B) {
	rm := fixtureMetrics()
	buf, err := AppendMetrics(nil, rm)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendMetrics(buf[:0], rm)
	}
}

// BenchmarkOfficialMetricsMarshal is the floor of the official metric path:
// proto.Marshal of the request already transformed.
func BenchmarkOfficialMetricsMarshal(b *testing.B) {
	buf, err := AppendMetrics(nil, fixtureMetrics())
	if err != nil {
		b.Fatal(err)
	}
	var req colmetric.ExportMetricsServiceRequest
	if err := proto.Unmarshal(buf, &req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := proto.Marshal(&req); err != nil {
			b.Fatal(err)
		}
	}
}
