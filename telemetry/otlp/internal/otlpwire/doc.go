// Package otlpwire writes the OTLP protobuf bytes of spans and metrics, and
// reads the partial-success part of an export response, without the protobuf
// runtime.
//
// It exists so that myelin can export to an OpenTelemetry collector without
// linking google.golang.org/protobuf, go.opentelemetry.io/proto/otlp, gRPC and
// the official exporters (their inits and pages are paid at every start).
// AppendSpans writes an opentelemetry.proto.collector.trace.v1.
// ExportTraceServiceRequest and AppendMetrics an ExportMetricsServiceRequest
// carrying what the official exporters (go.opentelemetry.io/otel/exporters/
// otlp/*, v1.43.0) would carry, field for field: the tests decode both with
// the official types and compare them, and compare the bytes.
//
// The one intended difference: the official exporters marshal with
// proto.Marshal, which fails the whole batch when any string (a span name, an
// attribute key or value, a status message, a scope or resource string…) is
// not valid UTF-8. This package writes such a string made well formed instead:
// each byte that does not begin a valid UTF-8 sequence becomes U+FFFD, as
// string([]rune(s)) and encoding/json do (so "a\xff\xfeb" becomes
// "a\uFFFD\uFFFDb", not one U+FFFD for the run as strings.ToValidUTF8 would
// write). The same rule is applied to the error message ReadPartialSuccess
// returns. Where two keys of one attribute list differ as given but are
// equal made well formed ("k\xfe" and "k\xff"), only the last is written:
// OTLP requires the keys of a list to be unique, and the SDK keeps the last
// of equal keys.
//
// The resource groups of AppendSpans are in the order their first span comes
// in (the official exporter's order is a map's, so random); scopes within a
// resource and spans within a scope are in the official order.
//
// This package must not do I/O, must not import the protobuf runtime, the
// OTLP proto types or an exporter package outside its tests (a test checks),
// and must not keep state between calls: sending the bytes, retries and
// compression are the collector package's.
package otlpwire
