package collector

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// fakePartial reads a fake answer: "rejected:message".
func fakePartial(resp []byte) (int64, string, error) {
	n, msg, ok := strings.Cut(string(resp), ":")
	if !ok {
		return 0, "", errors.New("not an answer")
	}
	return int64(len(n)), msg, nil
}

func encodeSpans(dst []byte, spans []sdktrace.ReadOnlySpan) []byte {
	for _, s := range spans {
		dst = append(dst, s.Name()...)
	}
	return dst
}

func TestAPartialSuccessGoesToOtelHandle(t *testing.T) {
	s := newScripted(t, scripted{status: 200, header: protobufAnswer, body: []byte("xx:too old")})
	errs := handled(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(NewSpanExporter(httpClient(t, s.URL, false), encodeSpans, fakePartial)))
	_, span := tp.Tracer("t").Start(context.Background(), "a span")
	span.End()
	tp.Shutdown(context.Background())
	if string(s.bodies[0]) != "a span" {
		t.Errorf("sent %q", s.bodies[0])
	}
	var ps *partialSuccess
	if len(*errs) != 1 || !errors.As((*errs)[0], &ps) || ps.rejected != 2 || ps.kind != "spans" {
		t.Fatalf("handled %v", *errs)
	}
	if want := "OTLP partial success: too old (2 spans rejected)"; (*errs)[0].Error() != want {
		t.Errorf("%q, want %q", (*errs)[0], want)
	}
}

func TestAnswers(t *testing.T) {
	tests := []struct {
		resp string
		want string // "" for no error
	}{
		{"", ""},
		{":", ""},
		{"x:", "OTLP partial success: empty message (1 metric data points rejected)"},
		{":warning", "OTLP partial success: warning (0 metric data points rejected)"},
		{"garbage", "reading the collector's answer: not an answer"},
	}
	for _, tt := range tests {
		err := answer([]byte(tt.resp), fakePartial, "metric data points")
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("answer(%q) = %v, want %q", tt.resp, err, tt.want)
		}
	}
}

func TestSpanExporterAfterShutdownFails(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	exp := NewSpanExporter(httpClient(t, s.URL, false), encodeSpans, fakePartial)
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := exp.ExportSpans(context.Background(), paritySpans())
	if !errors.Is(err, errShutdown) || s.count() != 0 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Errorf("a second shutdown: %v", err)
	}
}

func metricClient(t *testing.T, url string, cfg Config) *Client {
	cfg.Signal, cfg.Protocol, cfg.URL = Metrics, HTTPProtobuf, url+"/v1/metrics"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestMetricExporter(t *testing.T) {
	s := newScripted(t, scripted{status: 200, header: protobufAnswer, body: []byte("xxx:late")})
	encErr := errors.New("a histogram it cannot encode")
	exp := NewMetricExporter(metricClient(t, s.URL, Config{Temporality: sdkmetric.DeltaTemporalitySelector}),
		func(dst []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
			return append(dst, rm.ScopeMetrics[0].Metrics[0].Name...), encErr
		}, fakePartial)
	if got := exp.Temporality(sdkmetric.InstrumentKindCounter); got != metricdata.DeltaTemporality {
		t.Errorf("temporality %v, want the config's delta", got)
	}
	if _, ok := exp.Aggregation(sdkmetric.InstrumentKindHistogram).(sdkmetric.AggregationExplicitBucketHistogram); !ok {
		t.Errorf("aggregation %T, want the default", exp.Aggregation(sdkmetric.InstrumentKindHistogram))
	}
	err := exp.Export(context.Background(), parityMetrics())
	var ps *partialSuccess
	if !errors.Is(err, encErr) || !errors.As(err, &ps) || ps.rejected != 3 || ps.kind != "metric data points" {
		t.Fatalf("err %v: want the encoding's and the partial success", err)
	}
	if string(s.bodies[0]) != "gen_ai.client.token.usage" {
		t.Errorf("sent %q: what could be encoded is sent", s.bodies[0])
	}
	if err := exp.ForceFlush(context.Background()); err != nil {
		t.Error(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(context.Background(), parityMetrics()); !errors.Is(err, errShutdown) || s.count() != 1 {
		t.Errorf("an export after shutdown: %v, %d requests", err, s.count())
	}
	if err := exp.Shutdown(context.Background()); !errors.Is(err, errShutdown) {
		t.Errorf("a second shutdown: %v", err)
	}
}

func TestMetricExporterDefaultsWithoutPreferences(t *testing.T) {
	exp := NewMetricExporter(metricClient(t, "http://127.0.0.1:1", Config{}), nil, nil)
	for _, k := range []sdkmetric.InstrumentKind{sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram} {
		if exp.Temporality(k) != sdkmetric.DefaultTemporalitySelector(k) {
			t.Errorf("%v: temporality %v", k, exp.Temporality(k))
		}
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	for _, c := range []Config{
		{Signal: "logs", Protocol: GRPC, URL: "http://c:4317"},
		{Signal: Traces, Protocol: "http/json", URL: "http://c:4318/v1/traces"},
		{Signal: Traces, Protocol: GRPC, URL: "c:4317"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) took it", c)
		}
	}
}

// A batch of only nil spans encodes to nothing: nothing is posted, as
// the official posts nothing.
func TestABatchThatEncodesToNothingIsNotPosted(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	exp := NewSpanExporter(httpClient(t, s.URL, false), func(dst []byte, _ []sdktrace.ReadOnlySpan) []byte { return dst }, fakePartial)
	if err := exp.ExportSpans(context.Background(), make([]sdktrace.ReadOnlySpan, 2)); err != nil || s.count() != 0 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}
}

// The exporters hand encode the last export's buffer, emptied (dst[:0]),
// as AppendSpans and AppendMetrics' docs ask, and send what it returns.
func TestTheExportersReuseTheirEncodingBuffer(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	var caps []int
	spans := NewSpanExporter(httpClient(t, s.URL, false), func(dst []byte, ss []sdktrace.ReadOnlySpan) []byte {
		caps = append(caps, cap(dst))
		if len(dst) != 0 {
			t.Errorf("dst holds %q", dst)
		}
		return encodeSpans(dst, ss)
	}, fakePartial)
	for range 2 {
		if err := spans.ExportSpans(context.Background(), paritySpans()); err != nil {
			t.Fatal(err)
		}
	}
	metrics := NewMetricExporter(metricClient(t, s.URL, Config{}), func(dst []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
		caps = append(caps, cap(dst))
		return append(dst, rm.ScopeMetrics[0].Metrics[0].Name...), nil
	}, fakePartial)
	for range 2 {
		if err := metrics.Export(context.Background(), parityMetrics()); err != nil {
			t.Fatal(err)
		}
	}
	if len(caps) != 4 || caps[0] != 0 || caps[1] == 0 || caps[2] != 0 || caps[3] == 0 {
		t.Errorf("capacities of dst %v, want [0 >0 0 >0]", caps)
	}
	if len(s.bodies) != 4 || !bytes.Equal(s.bodies[0], s.bodies[1]) || !bytes.Equal(s.bodies[2], s.bodies[3]) {
		t.Errorf("bodies %q", s.bodies)
	}
}
