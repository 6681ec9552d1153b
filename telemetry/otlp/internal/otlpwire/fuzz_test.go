package otlpwire

import (
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// fuzzSpan is a span whose strings, numbers and flags come from the fuzzer;
// str is applied to each fuzzed string. The other keys are ASCII, so that
// str (identity or making well formed) cannot change the order of a set.
func fuzzSpan(t testing.TB, str func(string) string, key, s string, i int64, f float64, b bool, dropped int) sdktrace.ReadOnlySpan {
	t.Helper()
	k, v := str(key), str(s)
	kvs := []attribute.KeyValue{
		attribute.String(k, v), attribute.Int64("i", i), attribute.Float64("f", f), attribute.Bool("b", b),
		attribute.StringSlice("ss", []string{v, k}), attribute.Int64Slice("is", []int64{i, -i}),
		attribute.Float64Slice("fs", []float64{f}), attribute.BoolSlice("bs", []bool{b, !b}),
	}
	return tracetest.SpanStub{
		Name:              v,
		SpanContext:       spanContext(t, traceA, byte(i)|1, b, !b, ""),
		Parent:            spanContext(t, traceB, byte(i>>8), !b, b, ""),
		StartTime:         time.Unix(0, i),
		EndTime:           time.Unix(0, i).Add(time.Duration(dropped)),
		Attributes:        kvs,
		Events:            []sdktrace.Event{{Name: k, Time: time.Unix(0, i), Attributes: kvs, DroppedAttributeCount: dropped}},
		Links:             []sdktrace.Link{{SpanContext: spanContext(t, traceB, byte(dropped)|1, b, b, ""), Attributes: kvs}},
		Status:            sdktrace.Status{Code: codes.Code(dropped % 4), Description: v},
		Resource:          resource.NewWithAttributes(k, kvs...),
		DroppedAttributes: dropped, DroppedEvents: -dropped, DroppedLinks: dropped << 20,
		InstrumentationScope: instrumentation.Scope{Name: k, Version: v, SchemaURL: v, Attributes: attribute.NewSet(kvs...)},
	}.Snapshot()
}

// FuzzAppendSpans holds AppendSpans to the official exporter on fuzzed
// strings and numbers: for valid UTF-8 the two must be equal; for other
// strings ours must equal the official request of the strings made well
// formed.
func FuzzAppendSpans(f *testing.F) {
	f.Add("key", "value", int64(1), 1.5, true, 0)
	f.Add("", "", int64(0), 0.0, false, math.MaxInt) // past uint32 where int is 64 bits: clamped
	f.Add("k\xff", "\xe2\x82", int64(-1), -0.0, true, -3)
	off := newOfficialTracer(f)
	f.Fuzz(func(t *testing.T, key, s string, i int64, fl float64, b bool, dropped int) {
		ident := func(s string) string { return s }
		wellFormed := func(s string) string { return string([]rune(s)) }
		ours := AppendSpans(nil, []sdktrace.ReadOnlySpan{fuzzSpan(t, ident, key, s, i, fl, b, dropped)})
		official, err := off.export(t, []sdktrace.ReadOnlySpan{fuzzSpan(t, wellFormed, key, s, i, fl, b, dropped)})
		if err != nil {
			t.Fatalf("official exporter: %v", err)
		}
		requireSameTraceRequest(t, ours, official)
	})
}

// fuzzMetrics is every aggregation holding the fuzzer's numbers and str of
// its string.
func fuzzMetrics(str func(string) string, s string, i int64, f float64, c uint64, scale, offset int32) *metricdata.ResourceMetrics {
	v := str(s)
	set := attribute.NewSet(attribute.String("k", v), attribute.Int64("i", i), attribute.Float64("f", f))
	ex := []metricdata.Exemplar[float64]{{FilteredAttributes: []attribute.KeyValue{attribute.String(v, v)}, Value: f, Time: time.Unix(0, i), SpanID: []byte(s)}} // bytes, not text: as given
	exi := []metricdata.Exemplar[int64]{{Value: i, TraceID: []byte(s)}}
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes(v, attribute.String("r", v)),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: v, Version: v, SchemaURL: v},
			Metrics: []metricdata.Metrics{
				{Name: v, Description: v, Unit: v, Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, Value: i, Time: time.Unix(0, i), Exemplars: exi}}}},
				{Name: "sum", Data: metricdata.Sum[float64]{Temporality: metricdata.Temporality(1 + c%2), IsMonotonic: c%3 == 0,
					DataPoints: []metricdata.DataPoint[float64]{{Attributes: set, Value: f, StartTime: time.Unix(0, -i), Exemplars: ex}}}},
				{Name: "histogram", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality,
					DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: set, Count: c, Sum: f, Bounds: []float64{f, f * 2},
						BucketCounts: []uint64{c, c >> 7, 0}, Min: metricdata.NewExtrema(f), Exemplars: ex}}}},
				{Name: "exponential", Data: metricdata.ExponentialHistogram[int64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{Count: c, Sum: i, Scale: scale, ZeroCount: c >> 3,
						PositiveBucket: metricdata.ExponentialBucket{Offset: offset, Counts: []uint64{c, c >> 14, c >> 28}},
						NegativeBucket: metricdata.ExponentialBucket{Offset: -offset, Counts: []uint64{c >> 42}},
						Max:            metricdata.NewExtrema(i), Exemplars: exi}}}},
				{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{Attributes: set, Count: c, Sum: f,
					QuantileValues: []metricdata.QuantileValue{{Quantile: f, Value: -f}}}}}},
			},
		}},
	}
}

// FuzzAppendMetrics holds AppendMetrics to the official exporter on fuzzed
// numbers and a string, as FuzzAppendSpans does.
func FuzzAppendMetrics(f *testing.F) {
	f.Add("v", int64(1), 1.5, uint64(3), int32(-2), int32(5))
	f.Add("", int64(0), -0.0, uint64(0), int32(0), int32(0))
	f.Add("\xff", int64(-1<<63), 1e308, uint64(1<<63), int32(-1<<31), int32(1<<31-1))
	f.Fuzz(func(t *testing.T, s string, i int64, fl float64, c uint64, scale, offset int32) {
		official, err := officialMetrics(t, fuzzMetrics(func(s string) string { return string([]rune(s)) }, s, i, fl, c, scale, offset))
		if err != nil {
			t.Fatalf("official exporter: %v", err)
		}
		ours, err := AppendMetrics(nil, fuzzMetrics(func(s string) string { return s }, s, i, fl, c, scale, offset))
		if err != nil {
			t.Fatalf("AppendMetrics: %v", err)
		}
		requireSameMetricsRequest(t, ours, official)
	})
}
