package otlpwire

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// clashing are two attributes whose keys differ but are the same once made
// well formed ("k\uFFFD"), and a third that does not clash; in a set and in
// this slice, the "last" one comes last.
func clashing() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("k\xfe", "first"), attribute.String("k\xff", "last"), attribute.String("z", "z")}
}

// requireUniqueKeys fails t unless kvs (the list at where) holds each key
// once, the clashing key with the last one's value, as the SDK keeps the
// last of equal keys.
func requireUniqueKeys(t *testing.T, where string, kvs []*commonpb.KeyValue) {
	t.Helper()
	seen := map[string]string{}
	for _, kv := range kvs {
		if _, dup := seen[kv.GetKey()]; dup {
			t.Errorf("%s: key %q written twice", where, kv.GetKey())
		}
		seen[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	if len(seen) != 2 || seen["k\uFFFD"] != "last" || seen["z"] != "z" {
		t.Errorf("%s: %v, want k\uFFFD=last and z=z", where, seen)
	}
}

// Making keys well formed must not write one key twice in a list (OTLP:
// keys MUST be unique): of keys that become equal, the last is written.
func TestKeysMadeWellFormedStayUniqueInEveryList(t *testing.T) {
	kvs := clashing()
	set := attribute.NewSet(kvs...)
	span := tracetest.SpanStub{
		Name:                 "s",
		SpanContext:          spanContext(t, traceA, 1, true, false, ""),
		Attributes:           kvs,
		Events:               []sdktrace.Event{{Name: "e", Attributes: kvs}},
		Links:                []sdktrace.Link{{SpanContext: spanContext(t, traceB, 2, true, false, ""), Attributes: kvs}},
		Resource:             resource.NewSchemaless(kvs...),
		InstrumentationScope: instrumentation.Scope{Name: "scope", Attributes: set},
	}.Snapshot()
	var tr coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(AppendSpans(nil, []sdktrace.ReadOnlySpan{span}), &tr); err != nil {
		t.Fatal(err)
	}
	rs := tr.GetResourceSpans()[0]
	s := rs.GetScopeSpans()[0].GetSpans()[0]
	requireUniqueKeys(t, "span resource", rs.GetResource().GetAttributes())
	requireUniqueKeys(t, "span scope", rs.GetScopeSpans()[0].GetScope().GetAttributes())
	requireUniqueKeys(t, "span", s.GetAttributes())
	requireUniqueKeys(t, "event", s.GetEvents()[0].GetAttributes())
	requireUniqueKeys(t, "link", s.GetLinks()[0].GetAttributes())

	rm := &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(kvs...),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "scope", Attributes: set},
			Metrics: []metricdata.Metrics{{Name: "gauge", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{
				Attributes: set, Time: time.Unix(1, 0), Value: 1,
				Exemplars: []metricdata.Exemplar[float64]{{FilteredAttributes: kvs, Time: time.Unix(1, 0), Value: 1}},
			}}}}},
		}},
	}
	b, err := AppendMetrics(nil, rm)
	if err != nil {
		t.Fatal(err)
	}
	var mr colmetric.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &mr); err != nil {
		t.Fatal(err)
	}
	mrs := mr.GetResourceMetrics()[0]
	dp := mrs.GetScopeMetrics()[0].GetMetrics()[0].GetGauge().GetDataPoints()[0]
	requireUniqueKeys(t, "metric resource", mrs.GetResource().GetAttributes())
	requireUniqueKeys(t, "metric scope", mrs.GetScopeMetrics()[0].GetScope().GetAttributes())
	requireUniqueKeys(t, "data point", dp.GetAttributes())
	requireUniqueKeys(t, "exemplar", dp.GetExemplars()[0].GetFilteredAttributes())
}
