package collector

import (
	"context"
	"fmt"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// PartialFunc reads the partial_success of an encoded
// Export*ServiceResponse: how many items the collector rejected and why.
type PartialFunc func(resp []byte) (rejected int64, msg string, err error)

// partialSuccess is a collector's answer that it took some of an export
// and rejected the rest, an error as the official's.
type partialSuccess struct {
	rejected int64
	kind     string // "spans", "metric data points"
	msg      string
}

func (p *partialSuccess) Error() string {
	msg := p.msg
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Sprintf("OTLP partial success: %s (%d %s rejected)", msg, p.rejected, p.kind)
}

// answer is the error the collector's answer resp holds: a partial
// success, or an answer that partial cannot read; nil otherwise.
func answer(resp []byte, partial PartialFunc, kind string) error {
	if len(resp) == 0 {
		return nil
	}
	n, msg, err := partial(resp)
	if err != nil {
		return fmt.Errorf("collector: reading the collector's answer: %w", err)
	}
	if n != 0 || msg != "" {
		return &partialSuccess{rejected: n, kind: kind, msg: msg}
	}
	return nil
}

// keepBuffer is the largest encoding buffer an exporter keeps for its
// next export; a larger one (a burst) is left to the garbage collector.
const keepBuffer = 4 << 20

// spanExporter is NewSpanExporter's.
type spanExporter struct {
	c       *Client
	encode  func([]byte, []sdktrace.ReadOnlySpan) []byte
	partial PartialFunc

	mu  sync.Mutex // guards buf, from the encoding to the export's end
	buf []byte     // the last export's encoding, reused (dst[:0])
}

// NewSpanExporter is a span exporter sending through c (a Traces client)
// what encode makes of the spans, an ExportTraceServiceRequest. A partial
// success, read by partial, is its Export's error, which the SDK's span
// processor hands to otel.Handle, as the official's. Its Shutdown closes c;
// an export after it fails. The exports of one exporter run one at a time:
// a mutex holds its encoding buffer, reused by the next export, from the
// encoding to the export's end (the SDK's batch processor exports one
// batch at a time anyway).
func NewSpanExporter(c *Client, encode func(dst []byte, spans []sdktrace.ReadOnlySpan) []byte, partial PartialFunc) sdktrace.SpanExporter {
	return &spanExporter{c: c, encode: encode, partial: partial}
}

// ExportSpans sends spans, encoded, and returns the failure or the partial
// success; it must not be called after Shutdown (an error).
func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	body := e.encode(e.buf[:0], spans)
	if cap(body) <= keepBuffer {
		e.buf = body
	}
	if len(body) == 0 {
		return nil // only nil spans: nothing to send, as the official
	}
	resp, err := e.c.Export(ctx, body)
	if err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return answer(resp, e.partial, "spans")
}

// Shutdown closes the client, ending an export in flight.
func (e *spanExporter) Shutdown(ctx context.Context) error {
	e.c.Close()
	return ctx.Err()
}

// metricExporter is NewMetricExporter's.
type metricExporter struct {
	c       *Client
	encode  func([]byte, *metricdata.ResourceMetrics) ([]byte, error)
	partial PartialFunc

	mu   sync.Mutex // one export at a time, as the official's; guards buf
	shut bool
	buf  []byte // the last export's encoding, reused (dst[:0])
}

// NewMetricExporter is a metric exporter sending through c (a Metrics
// client) what encode makes of the metrics, an
// ExportMetricsServiceRequest, with the temporality and aggregation of c's
// Config (the SDK's defaults when unset). What encode could not encode is
// an error, the rest sent all the same, as the official. A partial success
// is Export's error, as for spans. After Shutdown, Export and Shutdown
// fail.
func NewMetricExporter(c *Client, encode func(dst []byte, rm *metricdata.ResourceMetrics) ([]byte, error), partial PartialFunc) sdkmetric.Exporter {
	return &metricExporter{c: c, encode: encode, partial: partial}
}

// Temporality is the Config's, or the SDK's default.
func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	if e.c.cfg.Temporality != nil {
		return e.c.cfg.Temporality(k)
	}
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation is the Config's, or the SDK's default.
func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	if e.c.cfg.Aggregation != nil {
		return e.c.cfg.Aggregation(k)
	}
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export sends rm, encoded, one export at a time; it must not be called
// after Shutdown (an error).
func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errShutdown
	}
	body, encErr := e.encode(e.buf[:0], rm)
	if cap(body) <= keepBuffer {
		e.buf = body
	}
	resp, err := e.c.Export(ctx, body)
	if err == nil {
		err = answer(resp, e.partial, "metric data points")
	}
	switch {
	case err != nil && encErr != nil:
		return fmt.Errorf("failed to upload incomplete metrics (%w): %w", encErr, err)
	case err != nil:
		return fmt.Errorf("failed to upload metrics: %w", err)
	}
	return encErr
}

// ForceFlush has nothing to flush: the exporter holds nothing.
func (e *metricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

// Shutdown closes the client, ending an export in flight; a second
// Shutdown is an error, as the official's.
func (e *metricExporter) Shutdown(ctx context.Context) error {
	e.c.Close() // first: an export in flight ends
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return errShutdown
	}
	e.shut = true
	return ctx.Err()
}
