// Package otlptest is an OTLP receiver on loopback for tests: it takes
// what an OTLP exporter sends over HTTP (protobuf, gzip or not) or gRPC,
// decodes it, and keeps the spans and metric points for a test to check.
//
// It is for tests only: it keeps everything it is sent in memory, and must
// not listen beyond 127.0.0.1.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // a collector takes gzip over gRPC: so does the receiver
	"google.golang.org/protobuf/proto"
)

// Span is one exported span as the receiver decoded it.
type Span struct {
	Name                   string
	TraceID, SpanID        string // hex
	ParentSpanID           string // hex; "" for a root span
	Kind                   string // "internal", "server", "client", "producer", "consumer"
	Start, End             time.Time
	Attributes             map[string]any // string, int64, float64, bool or []any
	Events                 []Event
	StatusCode, StatusText string // StatusCode: "unset", "ok" or "error"
	Scope                  string // the instrumentation scope's name
	Resource               map[string]any
}

// Event is a span event.
type Event struct {
	Name       string
	Attributes map[string]any
}

// Point is one data point of an exported metric: a histogram's count and
// sum, or a sum's or gauge's value.
type Point struct {
	Metric     string
	Unit       string
	Attributes map[string]any
	Count      uint64  // histograms
	Sum        float64 // histograms: the sum; sums and gauges: the value
}

// Receiver receives OTLP over HTTP and gRPC on loopback. Its zero value
// is not usable: call Start.
type Receiver struct {
	// HTTP is the base URL of the HTTP receiver (http://127.0.0.1:port),
	// for OTEL_EXPORTER_OTLP_ENDPOINT with the http/protobuf protocol.
	HTTP string
	// GRPC is the address of the gRPC receiver (127.0.0.1:port), for
	// OTEL_EXPORTER_OTLP_ENDPOINT="http://"+GRPC with the grpc protocol.
	GRPC string

	mu      sync.Mutex
	spans   []Span
	points  []Point
	headers []http.Header // of each HTTP export, for tests of what the exporter sends
	changed chan struct{} // closed and replaced on each export
}

// Start starts a receiver on loopback, stopped when t ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: listening for HTTP: %v", err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: listening for gRPC: %v", err)
	}
	r.HTTP, r.GRPC = "http://"+hl.Addr().String(), gl.Addr().String()
	hs := &http.Server{Handler: http.HandlerFunc(r.serveHTTP)}
	go hs.Serve(hl)
	gs := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(gs, traceService{r: r})
	collmetrics.RegisterMetricsServiceServer(gs, metricsService{r: r})
	go gs.Serve(gl)
	t.Cleanup(func() {
		gs.Stop()
		hs.Close()
	})
	return r
}

// UseHTTP points the OTLP exporters at r's HTTP receiver for the rest of
// t (t.Setenv: t must not be parallel), exporting traces and metrics with
// a short metric interval.
func (r *Receiver) UseHTTP(t testing.TB) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.HTTP)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
}

// UseGRPC points the OTLP exporters at r's gRPC receiver for the rest of
// t (t.Setenv: t must not be parallel).
func (r *Receiver) UseGRPC(t testing.TB) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+r.GRPC)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
}

// Spans are the spans received so far, in the order they arrived.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Points are the metric points received so far.
func (r *Receiver) Points() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Point(nil), r.points...)
}

// Headers are the headers of the HTTP exports received so far.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// WaitSpan waits until a span named name has arrived, or ctx ends (an
// error that lists the names that did arrive).
func (r *Receiver) WaitSpan(ctx context.Context, name string) (Span, error) {
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if s.Name == name {
				r.mu.Unlock()
				return s, nil
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Span{}, fmt.Errorf("otlptest: no span %q arrived (%v); these did: %s", name, ctx.Err(), strings.Join(Names(r.Spans()), ", "))
		}
	}
}

// WaitMetric waits until a point of metric name has arrived, or ctx ends.
func (r *Receiver) WaitMetric(ctx context.Context, name string) ([]Point, error) {
	for {
		r.mu.Lock()
		var got []Point
		for _, p := range r.points {
			if p.Metric == name {
				got = append(got, p)
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if len(got) > 0 {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("otlptest: no point of metric %q arrived: %w", name, ctx.Err())
		}
	}
}

// Names are the names of spans, in order.
func Names(spans []Span) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name
	}
	return names
}

// Tree draws spans as an indented tree of names, children under their
// parent in start order, for a test to compare whole: a span whose parent
// is not among spans is a root.
func Tree(spans []Span) string {
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	kids := map[string][]Span{}
	for _, s := range spans {
		p := s.ParentSpanID
		if !ids[p] {
			p = ""
		}
		kids[p] = append(kids[p], s)
	}
	var b strings.Builder
	var draw func(parent string, depth int)
	draw = func(parent string, depth int) {
		list := kids[parent]
		sort.SliceStable(list, func(i, j int) bool { return list[i].Start.Before(list[j].Start) })
		for _, s := range list {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), s.Name)
			draw(s.SpanID, depth+1)
		}
	}
	draw("", 0)
	return b.String()
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.Header.Get("Content-Encoding") == "gzip" {
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(z)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reply proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var m colltrace.ExportTraceServiceRequest
		if err = proto.Unmarshal(body, &m); err == nil {
			r.addSpans(&m)
		}
		reply = &colltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var m collmetrics.ExportMetricsServiceRequest
		if err = proto.Unmarshal(body, &m); err == nil {
			r.addMetrics(&m)
		}
		reply = &collmetrics.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		http.Error(w, "otlptest: decoding: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

type traceService struct {
	colltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, m *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.r.addSpans(m)
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(_ context.Context, m *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	s.r.addMetrics(m)
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

// notify wakes the waiters; r.mu is held.
func (r *Receiver) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Receiver) addSpans(m *colltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range m.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Kind:         strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
					Start:        time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attributes: attributes(s.GetAttributes()),
					StatusCode: strings.ToLower(strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_")),
					StatusText: s.GetStatus().GetMessage(), Scope: ss.GetScope().GetName(), Resource: res,
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Attributes: attributes(e.GetAttributes())})
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.notify()
}

func (r *Receiver) addMetrics(m *collmetrics.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range m.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, mt := range sm.GetMetrics() {
				add := func(attrs []*common.KeyValue, count uint64, sum float64) {
					r.points = append(r.points, Point{Metric: mt.GetName(), Unit: mt.GetUnit(), Attributes: attributes(attrs), Count: count, Sum: sum})
				}
				switch d := mt.GetData().(type) {
				case *metricpb.Metric_Histogram:
					for _, p := range d.Histogram.GetDataPoints() {
						add(p.GetAttributes(), p.GetCount(), p.GetSum())
					}
				case *metricpb.Metric_Sum:
					for _, p := range d.Sum.GetDataPoints() {
						add(p.GetAttributes(), 0, number(p))
					}
				case *metricpb.Metric_Gauge:
					for _, p := range d.Gauge.GetDataPoints() {
						add(p.GetAttributes(), 0, number(p))
					}
				}
			}
		}
	}
	r.notify()
}

func number(p *metricpb.NumberDataPoint) float64 {
	if v, ok := p.GetValue().(*metricpb.NumberDataPoint_AsInt); ok {
		return float64(v.AsInt)
	}
	return p.GetAsDouble()
}

func attributes(kvs []*common.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	default:
		return nil
	}
}
