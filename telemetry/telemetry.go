// Package telemetry owns what myelin tells OpenTelemetry: the spans and
// metrics of the GenAI semantic conventions that a turn, its provider
// requests and its tool calls make, serve's server spans, and the trace
// context that flows from an HTTP request through serve, a queued turn's
// job and into MCP HTTP requests (docs/telemetry.md). It depends on
// OpenTelemetry's API only; the SDK and the OTLP exporters, set up from
// the OTEL_* environment, are package telemetry/otlp's, which installs
// them here (Use) — so that a program embedding the agent links neither
// unless it exports.
//
// Telemetry is off until providers are installed, and off costs
// one atomic load per span that would have been made: every function here
// returns at once, allocating nothing. It must not read or export what a
// tool returned or the model said unless the user opts in
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), and must not fail a
// turn: an exporter that cannot reach its collector drops what it had.
package telemetry

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of everything myelin exports.
const ScopeName = "github.com/myelin-run/myelin"

// CaptureContentEnv is the environment variable that, set to "true", lets
// spans carry what tools were called with and returned (the GenAI
// conventions' opt-in content capture). Off by default: a span then says a
// result's size and spill file, never its text.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// state is what Use installed; nil while telemetry is off.
type state struct {
	tracer  trace.Tracer
	meter   metric.Meter
	content bool // capture content (CaptureContentEnv)
	inst    *instruments
}

var current atomic.Pointer[state]

// On reports whether telemetry is exporting: providers are installed
// (Use; telemetry/otlp.Setup when the environment names an exporter) and
// have not been taken back.
func On() bool { return current.Load() != nil }
