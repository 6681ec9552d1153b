package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// seen is what a recording receiver saw of one export, to compare the
// official exporter's with ours.
type seen struct {
	Protocol    string
	Method      string // HTTP method, or the gRPC method
	Path        string
	Headers     map[string]string // the ones that matter, lower-case names
	Compression string
	Deadline    bool   // gRPC: a grpc-timeout was sent
	Body        []byte // decompressed (HTTP), re-marshalled deterministically (gRPC)
}

// recorder is a loopback OTLP receiver that takes any path over HTTP and
// both services over gRPC, recording each export as seen.
type recorder struct {
	httpURL, grpcAddr string
	mu                sync.Mutex
	seen              []seen
}

// compared are the headers the parity compares; user-agent is compared
// without the suffixes each adds.
var compared = []string{"content-type", "content-encoding", "x-tenant", "authorization", "user-agent", "x-token-bin"}

var uaSuffix = regexp.MustCompile(` \(myelin[^)]*\)| grpc-go/\S+`)

func pick(get func(string) string) map[string]string {
	m := map[string]string{}
	for _, k := range compared {
		if v := get(k); v != "" {
			if k == "user-agent" {
				v = uaSuffix.ReplaceAllString(v, "")
			}
			m[k] = v
		}
	}
	return m
}

func (r *recorder) add(s seen) {
	r.mu.Lock()
	r.seen = append(r.seen, s)
	r.mu.Unlock()
}

func (r *recorder) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	r.seen = nil
	return s
}

type recTrace struct {
	colltrace.UnimplementedTraceServiceServer
	r *recorder
}

func (s recTrace) Export(ctx context.Context, m *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.r.addGRPC(ctx, m)
	return &colltrace.ExportTraceServiceResponse{}, nil
}

type recMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *recorder
}

func (s recMetrics) Export(ctx context.Context, m *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	s.r.addGRPC(ctx, m)
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

func (r *recorder) addGRPC(ctx context.Context, m proto.Message) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := ctx.Value(inHeaderKey{}).(*stats.InHeader)
	_, dl := ctx.Deadline()
	body, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	r.add(seen{Protocol: GRPC, Method: h.FullMethod, Compression: h.Compression, Deadline: dl, Body: body,
		Headers: pick(func(k string) string { return strings.Join(md.Get(k), ",") })})
}

func startRecorder(t *testing.T) *recorder {
	r := &recorder{}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.httpURL, r.grpcAddr = "http://"+hl.Addr().String(), gl.Addr().String()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if req.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(bytes.NewReader(body))
			if err == nil {
				body, _ = io.ReadAll(z)
			}
		}
		r.add(seen{Protocol: HTTPProtobuf, Method: req.Method, Path: req.URL.Path, Body: body, Compression: req.Header.Get("Content-Encoding"),
			Headers: pick(req.Header.Get)})
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go hs.Serve(hl)
	gs := grpc.NewServer(grpc.StatsHandler(headerStats{}))
	colltrace.RegisterTraceServiceServer(gs, recTrace{r: r})
	collmetrics.RegisterMetricsServiceServer(gs, recMetrics{r: r})
	go gs.Serve(gl)
	t.Cleanup(func() {
		gs.Stop()
		hs.Close()
	})
	return r
}

func paritySpans() []sdktrace.ReadOnlySpan {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	return tracetest.SpanStubs{{
		Name: "agent.run", SpanContext: sc, SpanKind: trace.SpanKindInternal, StartTime: start, EndTime: start.Add(time.Second),
		Attributes: []attribute.KeyValue{attribute.String("gen_ai.system", "anthropic"), attribute.Int("n", 3)},
		Resource:   resource.NewSchemaless(attribute.String("service.name", "myelin")),
	}}.Snapshots()
}

func parityMetrics() *metricdata.ResourceMetrics {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	return &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "myelin")),
		ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{{
			Name: "gen_ai.client.token.usage", Unit: "{token}",
			Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{StartTime: start, Time: start.Add(time.Second), Value: 42}}},
		}}}},
	}
}

// TestParityWithTheOfficialExporters runs the official exporter and ours
// with the same environment against a recording receiver and requires
// they are seen the same. The body ours sends is the one the official
// sent (the encoding is otlpwire's, not this package's): what is held
// here is that it arrives unchanged. Intended differences, left out of
// the comparison: the User-Agent's suffix (" (myelin…)" for ours,
// " grpc-go/…" for the official gRPC ones) and the grpc-timeout value.
func TestParityWithTheOfficialExporters(t *testing.T) {
	r := startRecorder(t)
	type env = map[string]string
	tests := []struct {
		name     string
		signal   string
		protocol string
		env      env
	}{
		{"http generic endpoint, headers with escapes", Traces, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL,
			"OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=a%20b%2Cc,Authorization=Bearer%3Dk"}},
		{"http generic endpoint with a path, gzip", Traces, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL + "/base/",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "3000"}},
		{"http signal endpoint with a path", Traces, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.httpURL + "/custom/traces", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-tenant=t"}},
		{"http signal endpoint without a path", Traces, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.httpURL,
			"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"}},
		{"http metrics generic endpoint, headers", Metrics, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_ENDPOINT": r.httpURL,
			"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "X-Tenant=m%21"}},
		{"http metrics signal endpoint, gzip", Metrics, HTTPProtobuf, env{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": r.httpURL + "/m",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "2000"}},
		{"grpc generic endpoint, headers", Traces, GRPC, env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + r.grpcAddr,
			"OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=a%20b,authorization=k,X-Token-Bin=%01%02x"}},
		{"grpc signal endpoint, gzip, https made insecure", Traces, GRPC, env{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://" + r.grpcAddr + "/",
			"OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "4000"}},
		{"grpc metrics, gzip, headers", Metrics, GRPC, env{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://" + r.grpcAddr,
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "X-Tenant=m"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			official := exportOfficial(t, ctx, r, tt.signal, tt.protocol)
			if len(official) != 1 {
				t.Fatalf("the official exporter was seen %d times", len(official))
			}
			cfg, err := FromEnv(os.Getenv, os.ReadFile, tt.signal, tt.protocol)
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			same := func([]byte) []byte { return official[0].Body }
			if tt.signal == Traces {
				exp := NewSpanExporter(c, func(dst []byte, _ []sdktrace.ReadOnlySpan) []byte { return same(dst) }, nil)
				err = exp.ExportSpans(ctx, paritySpans())
				exp.Shutdown(ctx)
			} else {
				exp := NewMetricExporter(c, func(dst []byte, _ *metricdata.ResourceMetrics) ([]byte, error) { return same(dst), nil }, nil)
				err = exp.Export(ctx, parityMetrics())
				exp.Shutdown(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			ours := r.take()
			if d := cmp.Diff(official, ours); d != "" {
				t.Errorf("(-official +ours)\n%s", d)
			}
		})
	}
}

// exportOfficial exports the parity telemetry with the official exporter
// of signal and protocol, configured by the environment, and returns what
// the receiver saw.
func exportOfficial(t *testing.T, ctx context.Context, r *recorder, signal, protocol string) []seen {
	t.Helper()
	var err error
	switch signal + " " + protocol {
	case Traces + " " + HTTPProtobuf, Traces + " " + GRPC:
		var exp sdktrace.SpanExporter
		if protocol == GRPC {
			exp, err = otlptracegrpc.New(ctx)
		} else {
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = exp.ExportSpans(ctx, paritySpans())
		exp.Shutdown(ctx)
	default:
		var exp sdkmetric.Exporter
		if protocol == GRPC {
			exp, err = otlpmetricgrpc.New(ctx)
		} else {
			exp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = exp.Export(ctx, parityMetrics())
		exp.Shutdown(ctx)
	}
	if err != nil {
		t.Fatalf("the official exporter: %v", err)
	}
	return r.take()
}
