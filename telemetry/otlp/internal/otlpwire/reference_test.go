package otlpwire

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// The official exporters are the reference these tests hold the package to:
// each posts to a loopback server that keeps the raw request bodies.

// capture is a loopback OTLP/HTTP receiver that keeps each request body and
// answers an empty protobuf response.
type capture struct {
	srv *httptest.Server

	mu     sync.Mutex
	bodies [][]byte
}

// newCapture starts a capture closed at the end of t.
func newCapture(t testing.TB) *capture {
	t.Helper()
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.bodies = append(c.bodies, body)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// take returns the bodies received since the last take.
func (c *capture) take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bodies
	c.bodies = nil
	return b
}

// officialTracer is the official otlptracehttp exporter posting to a capture.
type officialTracer struct {
	c   *capture
	exp *otlptrace.Exporter
}

// newOfficialTracer is an otlptracehttp exporter, without retries, posting to
// a fresh capture.
func newOfficialTracer(t testing.TB) *officialTracer {
	t.Helper()
	c := newCapture(t)
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(c.srv.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatalf("otlptracehttp.New: %v", err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return &officialTracer{c: c, exp: exp}
}

// export returns the body the official exporter posted for spans (nil when
// it posted nothing) and its error.
func (o *officialTracer) export(t testing.TB, spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	t.Helper()
	err := o.exp.ExportSpans(context.Background(), spans)
	bodies := o.c.take()
	switch len(bodies) {
	case 0:
		return nil, err
	case 1:
		return bodies[0], err
	}
	t.Fatalf("official trace exporter posted %d requests, want at most 1", len(bodies))
	return nil, nil
}

// officialMetrics exports rm through otlpmetrichttp to a fresh capture and
// returns the body it posted and its error.
func officialMetrics(t testing.TB, rm *metricdata.ResourceMetrics) ([]byte, error) {
	t.Helper()
	c := newCapture(t)
	exp, err := otlpmetrichttp.New(context.Background(),
		otlpmetrichttp.WithEndpointURL(c.srv.URL+"/v1/metrics"),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatalf("otlpmetrichttp.New: %v", err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	err = exp.Export(context.Background(), rm)
	bodies := c.take()
	switch len(bodies) {
	case 0:
		return nil, err
	case 1:
		return bodies[0], err
	}
	t.Fatalf("official metric exporter posted %d requests, want 1", len(bodies))
	return nil, nil
}

// sortedRecords is b's top-level fields, each whole (key and value), sorted
// by their bytes: the ResourceSpans of a trace request in an order that does
// not depend on the official exporter's map iteration.
func sortedRecords(t testing.TB, b []byte) [][]byte {
	t.Helper()
	recs := splitFields(t, b)
	slices.SortFunc(recs, bytes.Compare)
	return recs
}

// requireSameTraceRequest fails t unless ours and the official body decode
// to equal ExportTraceServiceRequests once the resource groups of both are
// in one order (the official order is a map's), and unless the bytes are the
// same in that order.
func requireSameTraceRequest(t testing.TB, ours, official []byte) {
	t.Helper()
	o, w := bytes.Join(sortedRecords(t, ours), nil), bytes.Join(sortedRecords(t, official), nil)
	var got, want coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(o, &got); err != nil {
		t.Fatalf("proto.Unmarshal of AppendSpans' bytes: %v", err)
	}
	if err := proto.Unmarshal(w, &want); err != nil {
		t.Fatalf("proto.Unmarshal of the official body: %v", err)
	}
	if !proto.Equal(&want, &got) {
		diff := cmp.Diff(&want, &got, protocmp.Transform(), cmpopts.EquateNaNs())
		t.Fatalf("AppendSpans' request differs from the official exporter's (-official +ours):\n%s", diff)
	}
	if !bytes.Equal(o, w) {
		t.Fatalf("AppendSpans' bytes differ from the official exporter's though they decode equal:\nours     %x\nofficial %x", o, w)
	}
}

// requireSameMetricsRequest fails t unless ours and the official body decode
// to equal ExportMetricsServiceRequests and are the same bytes.
func requireSameMetricsRequest(t testing.TB, ours, official []byte) {
	t.Helper()
	var got, want colmetric.ExportMetricsServiceRequest
	if err := proto.Unmarshal(ours, &got); err != nil {
		t.Fatalf("proto.Unmarshal of AppendMetrics' bytes: %v", err)
	}
	if err := proto.Unmarshal(official, &want); err != nil {
		t.Fatalf("proto.Unmarshal of the official body: %v", err)
	}
	if !proto.Equal(&want, &got) {
		diff := cmp.Diff(&want, &got, protocmp.Transform(), cmpopts.EquateNaNs())
		t.Fatalf("AppendMetrics' request differs from the official exporter's (-official +ours):\n%s", diff)
	}
	if !bytes.Equal(ours, official) {
		t.Fatalf("AppendMetrics' bytes differ from the official exporter's though they decode equal:\nours     %x\nofficial %x", ours, official)
	}
}
