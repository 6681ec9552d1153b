package otlpwire

import (
	"errors"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// exemplars is an exemplar with every field and one with none, of type N.
func exemplars[N int64 | float64](v N) []metricdata.Exemplar[N] {
	return []metricdata.Exemplar[N]{{
		FilteredAttributes: []attribute.KeyValue{attribute.String("user", "u1"), attribute.Int64("n", 3)},
		Time:               base.Add(time.Second),
		Value:              v,
		SpanID:             []byte{1, 2, 3, 4, 5, 6, 7, 8},
		TraceID:            traceA[:],
	}, {}}
}

// fixtureMetrics is every aggregation of both number types, with and
// without exemplars, min and max, of both temporalities, in two scopes.
func fixtureMetrics() *metricdata.ResourceMetrics {
	attrs := attribute.NewSet(attribute.String("model", "m"), attribute.Bool("ok", true))
	start, now := base, base.Add(10*time.Second)
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "myelin")),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: "myelin/telemetry", Version: "v1", SchemaURL: "https://s/1",
				Attributes: attribute.NewSet(attribute.String("a", "b"))},
			Metrics: []metricdata.Metrics{{
				Name: "gauge.int", Description: "an int gauge", Unit: "1",
				Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
					{Attributes: attrs, StartTime: start, Time: now, Value: -3, Exemplars: exemplars[int64](7)},
					{Time: now, Value: 0},
				}},
			}, {
				Name: "gauge.float",
				Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{
					{Attributes: attrs, Time: now, Value: 0.25, Exemplars: exemplars(1.5)},
					{Value: math.Copysign(0, -1)},
				}},
			}, {
				Name: "sum.int.delta.monotonic", Unit: "{token}",
				Data: metricdata.Sum[int64]{Temporality: metricdata.DeltaTemporality, IsMonotonic: true,
					DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, StartTime: start, Time: now, Value: 1 << 40}}},
			}, {
				Name: "sum.float.cumulative",
				Data: metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.DataPoint[float64]{{StartTime: start, Time: now, Value: math.NaN()}}},
			}, {
				Name: "sum.empty",
				Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality},
			}, {
				Name: "histogram.float.delta", Unit: "s",
				Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality,
					DataPoints: []metricdata.HistogramDataPoint[float64]{{
						Attributes: attrs, StartTime: start, Time: now, Count: 6,
						Bounds: []float64{0, 0.5, 1, math.Inf(1)}, BucketCounts: []uint64{1, 2, 0, 3, 0},
						Min: metricdata.NewExtrema(0.1), Max: metricdata.NewExtrema(9.5), Sum: 20.25,
						Exemplars: exemplars(0.75),
					}, {
						Time: now, // no bounds, no counts, no min or max, sum 0
					}}},
			}},
		}, {
			Scope: instrumentation.Scope{},
			Metrics: []metricdata.Metrics{{
				Name: "histogram.int.cumulative",
				Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[int64]{{
						StartTime: start, Time: now, Count: 2, Bounds: []float64{10}, BucketCounts: []uint64{1, 1},
						Min: metricdata.NewExtrema[int64](-4), Sum: 40, Exemplars: exemplars[int64](-4),
					}}},
			}, {
				Name: "exponential.float.delta",
				Data: metricdata.ExponentialHistogram[float64]{Temporality: metricdata.DeltaTemporality,
					DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{
						Attributes: attrs, StartTime: start, Time: now, Count: 400, Scale: -3, ZeroCount: 2,
						ZeroThreshold:  0.001, // the official transform does not send it
						PositiveBucket: metricdata.ExponentialBucket{Offset: -2, Counts: []uint64{1, 300, 0, 1 << 35}},
						NegativeBucket: metricdata.ExponentialBucket{Offset: 5, Counts: []uint64{96}},
						Min:            metricdata.NewExtrema(-8.0), Max: metricdata.NewExtrema(1e9), Sum: 12345.5,
						Exemplars: exemplars(2.5),
					}, {}}},
			}, {
				Name: "exponential.int.cumulative",
				Data: metricdata.ExponentialHistogram[int64]{Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{
						Time: now, Count: 1, Scale: 20, Max: metricdata.NewExtrema[int64](5), Sum: 5,
						PositiveBucket: metricdata.ExponentialBucket{Counts: []uint64{1}},
					}}},
			}, {
				Name: "summary",
				Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
					Attributes: attrs, StartTime: start, Time: now, Count: 10, Sum: 55.5,
					QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 0.5, Value: 0}, {Quantile: 1, Value: 10}},
				}, {Sum: math.Copysign(0, -1)}}},
			}},
		}},
	}
}

func TestAppendMetricsIsTheOfficialExportersRequest(t *testing.T) {
	rm := fixtureMetrics()
	official, err := officialMetrics(t, rm)
	if err != nil {
		t.Fatalf("official exporter: %v", err)
	}
	ours, err := AppendMetrics(nil, rm)
	if err != nil {
		t.Fatalf("AppendMetrics: %v", err)
	}
	requireSameMetricsRequest(t, ours, official)
}

func TestAppendMetricsOfNothingIsTheOfficialExportersRequest(t *testing.T) {
	for name, rm := range map[string]*metricdata.ResourceMetrics{
		"zero":                  {},
		"resource, no metric":   {Resource: resource.NewSchemaless(attribute.String("k", "v"))},
		"scope with no metrics": {ScopeMetrics: []metricdata.ScopeMetrics{{}}},
	} {
		t.Run(name, func(t *testing.T) {
			official, err := officialMetrics(t, rm)
			if err != nil {
				t.Fatalf("official exporter: %v", err)
			}
			ours, err := AppendMetrics(nil, rm)
			if err != nil {
				t.Fatalf("AppendMetrics: %v", err)
			}
			requireSameMetricsRequest(t, ours, official)
		})
	}
}

// unknownAggregation is an Aggregation the transforms do not know.
type unknownAggregation struct{ metricdata.Gauge[int64] }

func TestAppendMetricsLeavesOutWhatTheOfficialLeavesOutWithItsError(t *testing.T) {
	rm := fixtureMetrics()
	bad := []metricdata.Metrics{
		{Name: "custom", Description: "d", Unit: "u", Data: unknownAggregation{}},
		{Name: "pointer", Data: &metricdata.Sum[int64]{Temporality: metricdata.DeltaTemporality}},
		{Name: "no data"},
		{Name: "sum without temporality", Data: metricdata.Sum[float64]{}},
		{Name: "histogram of temporality 9", Data: metricdata.Histogram[int64]{Temporality: 9}},
		{Name: "exponential without temporality", Data: metricdata.ExponentialHistogram[float64]{}},
	}
	sm := &rm.ScopeMetrics[0]
	sm.Metrics = append(bad[:3:3], append(sm.Metrics, bad[3:]...)...)
	rm.ScopeMetrics[1].Metrics = append(rm.ScopeMetrics[1].Metrics, bad[0])

	official, officialErr := officialMetrics(t, rm)
	if officialErr == nil {
		t.Fatal("the official exporter took unknown aggregations without an error")
	}
	ours, err := AppendMetrics(nil, rm)
	if err == nil {
		t.Fatal("AppendMetrics took unknown aggregations without an error")
	}
	if err.Error() != officialErr.Error() {
		t.Errorf("AppendMetrics' error:\n%s\nthe official exporter's:\n%s", err, officialErr)
	}
	if !errors.Is(err, ErrUnknownAggregation) || !errors.Is(err, ErrUnknownTemporality) {
		t.Errorf("AppendMetrics' error %v does not wrap both ErrUnknownAggregation and ErrUnknownTemporality", err)
	}
	requireSameMetricsRequest(t, ours, official)
}

func TestAppendMetricsOfNilIsAnErrorAndAppendsNothing(t *testing.T) {
	got, err := AppendMetrics([]byte("x"), nil)
	if err == nil || string(got) != "x" {
		t.Fatalf("AppendMetrics(x, nil) = %q, %v; want x and an error", got, err)
	}
}

func TestAppendMetricsAppendsToDst(t *testing.T) {
	want, err := AppendMetrics(nil, fixtureMetrics())
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendMetrics([]byte("prefix"), fixtureMetrics())
	if err != nil || string(got) != "prefix"+string(want) {
		t.Fatalf("AppendMetrics(prefix) did not keep the prefix and append the request (error %v)", err)
	}
}
