package otlpwire

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ErrUnknownAggregation is wrapped by the error of AppendMetrics for a metric
// whose Data is not an aggregation the OTLP model has (the official
// transform's error text).
var ErrUnknownAggregation = errors.New("unknown aggregation")

// ErrUnknownTemporality is wrapped by the error of AppendMetrics for a Sum,
// Histogram or ExponentialHistogram whose temporality is neither delta nor
// cumulative (the official transform's error text).
var ErrUnknownTemporality = errors.New("unknown temporality")

// errNilResourceMetrics is the error of AppendMetrics for a nil rm.
var errNilResourceMetrics = errors.New("otlpwire: nil ResourceMetrics")

// AppendMetrics appends to dst the protobuf encoding of an
// opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest
// carrying rm (one ResourceMetrics, as the official exporters send), and
// returns the extended slice. A metric it cannot write (an unknown
// aggregation or temporality) is left out and the rest is written; the error
// then lists each such metric with the same text as the official transform's
// and wraps ErrUnknownAggregation or ErrUnknownTemporality, and the bytes
// are the partial request the official exporter would still send. A nil rm
// is an error and appends nothing. It does no I/O and keeps no reference to
// rm or dst.
func AppendMetrics(dst []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
	if rm == nil {
		return dst, errNilResourceMetrics
	}
	var errs metricErrors
	b, start := beginMessage(dst, 1)
	b = appendResource(b, 1, rm.Resource)
	for i := range rm.ScopeMetrics {
		b = appendScopeMetrics(b, &rm.ScopeMetrics[i], &errs)
	}
	b = appendStringField(b, 3, rm.Resource.SchemaURL())
	b = endMessage(b, start)
	if len(errs) > 0 {
		return b, errs
	}
	return b, nil
}

// appendScopeMetrics appends sm as a ScopeMetrics field (2): scope (1,
// always present here, as in the official metric transform), metrics (2),
// schema URL (3).
func appendScopeMetrics(b []byte, sm *metricdata.ScopeMetrics, errs *metricErrors) []byte {
	b, start := beginMessage(b, 2)
	b = appendScope(b, 1, sm.Scope)
	for i := range sm.Metrics {
		b = appendMetric(b, &sm.Metrics[i], errs)
	}
	b = appendStringField(b, 3, sm.Scope.SchemaURL)
	return endMessage(b, start)
}

// appendMetric appends m as a Metric field (2), or nothing and an error in
// errs when its aggregation or temporality is unknown. Its fields: name (1),
// description (2), unit (3), then the data oneof (5 gauge, 7 sum, 9
// histogram, 10 exponential histogram, 11 summary) last, as the protobuf
// runtime writes oneofs.
func appendMetric(b []byte, m *metricdata.Metrics, errs *metricErrors) []byte {
	if err := checkAggregation(m.Data); err != nil {
		*errs = append(*errs, metricError{name: m.Name, description: m.Description, unit: m.Unit, err: err})
		return b
	}
	b, start := beginMessage(b, 2)
	b = appendStringField(b, 1, m.Name)
	b = appendStringField(b, 2, m.Description)
	b = appendStringField(b, 3, m.Unit)
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		b = appendGauge(b, a.DataPoints)
	case metricdata.Gauge[float64]:
		b = appendGauge(b, a.DataPoints)
	case metricdata.Sum[int64]:
		b = appendSum(b, a.DataPoints, a.Temporality, a.IsMonotonic)
	case metricdata.Sum[float64]:
		b = appendSum(b, a.DataPoints, a.Temporality, a.IsMonotonic)
	case metricdata.Histogram[int64]:
		b = appendHistogram(b, a.DataPoints, a.Temporality)
	case metricdata.Histogram[float64]:
		b = appendHistogram(b, a.DataPoints, a.Temporality)
	case metricdata.ExponentialHistogram[int64]:
		b = appendExponentialHistogram(b, a.DataPoints, a.Temporality)
	case metricdata.ExponentialHistogram[float64]:
		b = appendExponentialHistogram(b, a.DataPoints, a.Temporality)
	case metricdata.Summary:
		b = appendSummary(b, a.DataPoints)
	}
	return endMessage(b, start)
}

// checkAggregation is the error the official transform gives data: an
// unknown aggregation, or an unknown temporality of one that has one.
func checkAggregation(data metricdata.Aggregation) error {
	var t metricdata.Temporality
	switch a := data.(type) {
	case metricdata.Gauge[int64], metricdata.Gauge[float64], metricdata.Summary:
		return nil
	case metricdata.Sum[int64]:
		t = a.Temporality
	case metricdata.Sum[float64]:
		t = a.Temporality
	case metricdata.Histogram[int64]:
		t = a.Temporality
	case metricdata.Histogram[float64]:
		t = a.Temporality
	case metricdata.ExponentialHistogram[int64]:
		t = a.Temporality
	case metricdata.ExponentialHistogram[float64]:
		t = a.Temporality
	default:
		return fmt.Errorf("%w: %T", ErrUnknownAggregation, data)
	}
	if _, err := temporality(t); err != nil {
		return err
	}
	return nil
}

// temporality is the OTLP AggregationTemporality number of t.
func temporality(t metricdata.Temporality) (uint64, error) {
	switch t {
	case metricdata.DeltaTemporality:
		return 1, nil
	case metricdata.CumulativeTemporality:
		return 2, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrUnknownTemporality, t)
}

// appendGauge appends the Gauge field (5) of a Metric: data points (1).
func appendGauge[N int64 | float64](b []byte, dps []metricdata.DataPoint[N]) []byte {
	b, start := beginMessage(b, 5)
	for i := range dps {
		b = appendNumberDataPoint(b, &dps[i])
	}
	return endMessage(b, start)
}

// appendSum appends the Sum field (7) of a Metric: data points (1),
// temporality (2), monotonic (3). The temporality was checked.
func appendSum[N int64 | float64](b []byte, dps []metricdata.DataPoint[N], t metricdata.Temporality, monotonic bool) []byte {
	b, start := beginMessage(b, 7)
	for i := range dps {
		b = appendNumberDataPoint(b, &dps[i])
	}
	tv, _ := temporality(t)
	b = appendVarintField(b, 2, tv)
	b = appendBoolField(b, 3, monotonic)
	return endMessage(b, start)
}

// appendNumberDataPoint appends dp as a NumberDataPoint field (1): start
// time (2), time (3), exemplars (5), attributes (7), then the value oneof
// (4 as_double, 6 as_int).
func appendNumberDataPoint[N int64 | float64](b []byte, dp *metricdata.DataPoint[N]) []byte {
	b, start := beginMessage(b, 1)
	b = appendFixed64Field(b, 2, unixNano(dp.StartTime))
	b = appendFixed64Field(b, 3, unixNano(dp.Time))
	b = appendExemplars(b, 5, dp.Exemplars)
	b = appendSet(b, 7, &dp.Attributes)
	b = appendNumber(b, 4, 6, dp.Value)
	return endMessage(b, start)
}

// appendNumber appends v as the oneof member asDouble (a float64) or asInt
// (an int64, sfixed64), written even when zero.
func appendNumber[N int64 | float64](b []byte, asDouble, asInt int, v N) []byte {
	switch v := any(v).(type) {
	case float64:
		return appendDouble(b, asDouble, v)
	case int64:
		return appendFixed64(appendTag(b, asInt, wireFixed64), uint64(v))
	}
	return b
}

// appendExemplars appends each exemplar as an Exemplar field num: time (2),
// span id (4), trace id (5), filtered attributes (7), then the value oneof
// (3 as_double, 6 as_int).
func appendExemplars[N int64 | float64](b []byte, num int, es []metricdata.Exemplar[N]) []byte {
	for i := range es {
		e := &es[i]
		var start int
		b, start = beginMessage(b, num)
		b = appendFixed64Field(b, 2, unixNano(e.Time))
		b = appendBytesField(b, 4, e.SpanID)
		b = appendBytesField(b, 5, e.TraceID)
		b = appendKeyValues(b, 7, e.FilteredAttributes)
		b = appendNumber(b, 3, 6, e.Value)
		b = endMessage(b, start)
	}
	return b
}

// appendHistogram appends the Histogram field (9) of a Metric: data points
// (1), temporality (2). The temporality was checked.
func appendHistogram[N int64 | float64](b []byte, dps []metricdata.HistogramDataPoint[N], t metricdata.Temporality) []byte {
	b, start := beginMessage(b, 9)
	for i := range dps {
		b = appendHistogramDataPoint(b, &dps[i])
	}
	tv, _ := temporality(t)
	b = appendVarintField(b, 2, tv)
	return endMessage(b, start)
}

// appendHistogramDataPoint appends dp as a HistogramDataPoint field (1):
// start time (2), time (3), count (4), sum (5, always), bucket counts (6,
// packed), explicit bounds (7, packed), exemplars (8), attributes (9), min
// (11) and max (12) when defined.
func appendHistogramDataPoint[N int64 | float64](b []byte, dp *metricdata.HistogramDataPoint[N]) []byte {
	b, start := beginMessage(b, 1)
	b = appendFixed64Field(b, 2, unixNano(dp.StartTime))
	b = appendFixed64Field(b, 3, unixNano(dp.Time))
	b = appendFixed64Field(b, 4, dp.Count)
	b = appendDouble(b, 5, float64(dp.Sum))
	if len(dp.BucketCounts) > 0 {
		b = appendVarint(appendTag(b, 6, wireBytes), uint64(8*len(dp.BucketCounts)))
		for _, c := range dp.BucketCounts {
			b = appendFixed64(b, c)
		}
	}
	if len(dp.Bounds) > 0 {
		b = appendVarint(appendTag(b, 7, wireBytes), uint64(8*len(dp.Bounds)))
		for _, f := range dp.Bounds {
			b = appendFixed64(b, math.Float64bits(f))
		}
	}
	b = appendExemplars(b, 8, dp.Exemplars)
	b = appendSet(b, 9, &dp.Attributes)
	if v, ok := dp.Min.Value(); ok {
		b = appendDouble(b, 11, float64(v))
	}
	if v, ok := dp.Max.Value(); ok {
		b = appendDouble(b, 12, float64(v))
	}
	return endMessage(b, start)
}

// appendExponentialHistogram appends the ExponentialHistogram field (10) of a
// Metric: data points (1), temporality (2). The temporality was checked.
func appendExponentialHistogram[N int64 | float64](b []byte, dps []metricdata.ExponentialHistogramDataPoint[N], t metricdata.Temporality) []byte {
	b, start := beginMessage(b, 10)
	for i := range dps {
		b = appendExponentialDataPoint(b, &dps[i])
	}
	tv, _ := temporality(t)
	b = appendVarintField(b, 2, tv)
	return endMessage(b, start)
}

// appendExponentialDataPoint appends dp as an ExponentialHistogramDataPoint
// field (1): attributes (1), start time (2), time (3), count (4), sum (5,
// always), scale (6), zero count (7), positive (8) and negative (9) buckets
// (always), exemplars (11), min (12) and max (13) when defined. The official
// transform writes no zero threshold (14); neither does this.
func appendExponentialDataPoint[N int64 | float64](b []byte, dp *metricdata.ExponentialHistogramDataPoint[N]) []byte {
	b, start := beginMessage(b, 1)
	b = appendSet(b, 1, &dp.Attributes)
	b = appendFixed64Field(b, 2, unixNano(dp.StartTime))
	b = appendFixed64Field(b, 3, unixNano(dp.Time))
	b = appendFixed64Field(b, 4, dp.Count)
	b = appendDouble(b, 5, float64(dp.Sum))
	b = appendSint32Field(b, 6, dp.Scale)
	b = appendFixed64Field(b, 7, dp.ZeroCount)
	b = appendBuckets(b, 8, dp.PositiveBucket)
	b = appendBuckets(b, 9, dp.NegativeBucket)
	b = appendExemplars(b, 11, dp.Exemplars)
	if v, ok := dp.Min.Value(); ok {
		b = appendDouble(b, 12, float64(v))
	}
	if v, ok := dp.Max.Value(); ok {
		b = appendDouble(b, 13, float64(v))
	}
	return endMessage(b, start)
}

// appendBuckets appends bk as the Buckets field num: offset (1, zigzag),
// bucket counts (2, packed varints).
func appendBuckets(b []byte, num int, bk metricdata.ExponentialBucket) []byte {
	b, start := beginMessage(b, num)
	b = appendSint32Field(b, 1, bk.Offset)
	if len(bk.Counts) > 0 {
		n := 0
		for _, c := range bk.Counts {
			n += varintSize(c)
		}
		b = appendVarint(appendTag(b, 2, wireBytes), uint64(n))
		for _, c := range bk.Counts {
			b = appendVarint(b, c)
		}
	}
	return endMessage(b, start)
}

// appendSummary appends the Summary field (11) of a Metric: data points (1),
// each a SummaryDataPoint: start time (2), time (3), count (4), sum (5),
// quantile values (6), attributes (7).
func appendSummary(b []byte, dps []metricdata.SummaryDataPoint) []byte {
	b, start := beginMessage(b, 11)
	for i := range dps {
		dp := &dps[i]
		var p int
		b, p = beginMessage(b, 1)
		b = appendFixed64Field(b, 2, unixNano(dp.StartTime))
		b = appendFixed64Field(b, 3, unixNano(dp.Time))
		b = appendFixed64Field(b, 4, dp.Count)
		b = appendDoubleField(b, 5, dp.Sum)
		for _, q := range dp.QuantileValues {
			var qs int
			b, qs = beginMessage(b, 6)
			b = appendDoubleField(b, 1, q.Quantile)
			b = appendDoubleField(b, 2, q.Value)
			b = endMessage(b, qs)
		}
		b = appendSet(b, 7, &dp.Attributes)
		b = endMessage(b, p)
	}
	return endMessage(b, start)
}

// metricError is a metric AppendMetrics left out, and why.
type metricError struct {
	name, description, unit string
	err                     error
}

// Error is the official transform's text for the metric.
func (e metricError) Error() string {
	return fmt.Sprintf("invalid metric (name: %q, description: %q, unit: %q): %s",
		e.name, e.description, e.unit, e.err)
}

// Unwrap is why the metric was left out.
func (e metricError) Unwrap() error { return e.err }

// metricErrors is the error of AppendMetrics: each metric left out.
type metricErrors []metricError

// Error is the official transform's text for the list.
func (e metricErrors) Error() string {
	es := make([]string, len(e))
	for i, err := range e {
		es[i] = "* " + err.Error()
	}
	return fmt.Sprintf("%d errors occurred transforming ScopeMetrics:\n\t%s", len(es), strings.Join(es, "\n\t"))
}

// Unwrap is each metric's error.
func (e metricErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, err := range e {
		out[i] = err
	}
	return out
}
