package telemetry

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Use makes tp and mp this package's providers, with content capture as
// content says, in place of what Setup installed (or nothing), and returns
// the function that puts back what was there. It is for tests, which
// record spans in memory (go.opentelemetry.io/otel/sdk/trace/tracetest)
// and metrics with a manual reader, and for an embedder that set up its
// own providers. It does not touch OpenTelemetry's globals, and must not
// be called while turns run: the swap is not ordered with their spans.
func Use(tp trace.TracerProvider, mp metric.MeterProvider, content bool) (restore func(), err error) {
	s := &state{tracer: tp.Tracer(ScopeName), meter: mp.Meter(ScopeName), content: content}
	if s.inst, err = newInstruments(s.meter); err != nil {
		return func() {}, err
	}
	before := current.Swap(s)
	return func() { current.Store(before) }, nil
}
