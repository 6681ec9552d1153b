package otlptest

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DiscardSpans is a span exporter that drops what it is given: the SDK's
// own work with nothing sent, for benchmarks that measure it.
type DiscardSpans struct{}

// ExportSpans drops spans.
func (DiscardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }

// Shutdown does nothing.
func (DiscardSpans) Shutdown(context.Context) error { return nil }

// DiscardMetrics is a metric exporter that drops what it is given, with
// the SDK's default temporality and aggregation.
type DiscardMetrics struct{}

// Temporality is the SDK's default.
func (DiscardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation is the SDK's default.
func (DiscardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export drops metrics.
func (DiscardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }

// ForceFlush does nothing.
func (DiscardMetrics) ForceFlush(context.Context) error { return nil }

// Shutdown does nothing.
func (DiscardMetrics) Shutdown(context.Context) error { return nil }
