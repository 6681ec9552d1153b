package collector

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the server understands gzip
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
)

// call is what the test gRPC server saw of one call.
type call struct {
	method      string
	md          metadata.MD
	compression string
	deadline    bool
	req         *colltrace.ExportTraceServiceRequest
}

// grpcServer is a real gRPC trace service on loopback answering with
// handle, recording the calls.
type grpcServer struct {
	addr   string
	mu     sync.Mutex
	calls  []call
	handle func(ctx context.Context, n int) (*colltrace.ExportTraceServiceResponse, error)
}

type traceService struct {
	colltrace.UnimplementedTraceServiceServer
	s *grpcServer
}

func (t traceService) Export(ctx context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	_, dl := ctx.Deadline()
	t.s.mu.Lock()
	n := len(t.s.calls)
	c := call{method: "/opentelemetry.proto.collector.trace.v1.TraceService/Export", md: md, deadline: dl, req: req}
	if h := ctx.Value(inHeaderKey{}); h != nil {
		c.compression = h.(*stats.InHeader).Compression
	}
	t.s.calls = append(t.s.calls, c)
	t.s.mu.Unlock()
	if t.s.handle == nil {
		return &colltrace.ExportTraceServiceResponse{}, nil
	}
	return t.s.handle(ctx, n)
}

type inHeaderKey struct{}

// headerStats puts the InHeader of each call in its context, for the
// compression the client used.
type headerStats struct{}

func (headerStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, inHeaderKey{}, &stats.InHeader{})
}
func (headerStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		*ctx.Value(inHeaderKey{}).(*stats.InHeader) = *h
	}
}
func (headerStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (headerStats) HandleConn(context.Context, stats.ConnStats)                       {}

func startGRPC(t *testing.T, tc *tls.Config, handle func(ctx context.Context, n int) (*colltrace.ExportTraceServiceResponse, error)) *grpcServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := []grpc.ServerOption{grpc.StatsHandler(headerStats{})}
	if tc != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	gs := grpc.NewServer(opts...)
	s := &grpcServer{addr: l.Addr().String(), handle: handle}
	colltrace.RegisterTraceServiceServer(gs, traceService{s: s})
	go gs.Serve(l)
	t.Cleanup(gs.Stop)
	return s
}

func (s *grpcServer) got() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

var testRequest = &colltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
	Spans: []*tracepb.Span{{Name: "a span", TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}}}}}}

func grpcClient(t *testing.T, env map[string]string) *Client {
	t.Helper()
	cfg, err := FromEnv(envOf(env), os.ReadFile, Traces, GRPC)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestGRPCExportsToARealServer(t *testing.T) {
	pki := newPKI(t)
	tests := []struct {
		name string
		tls  *tls.Config
		env  func(addr string) map[string]string
		gzip string
	}{
		{name: "h2c", env: func(addr string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=t%201,authorization=k"}
		}},
		{name: "h2c gzip", gzip: "gzip", env: func(addr string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
				"OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=t%201,authorization=k"}
		}},
		{name: "TLS with a client certificate, gzip", tls: pki.serverTLS(), gzip: "gzip", env: func(addr string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://" + addr, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
				"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.caFile, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.clientCert, "OTEL_EXPORTER_OTLP_CLIENT_KEY": pki.clientKey,
				"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "X-Tenant=t%201,authorization=k"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startGRPC(t, tt.tls, func(context.Context, int) (*colltrace.ExportTraceServiceResponse, error) {
				return &colltrace.ExportTraceServiceResponse{PartialSuccess: &colltrace.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}}, nil
			})
			c := grpcClient(t, tt.env(s.addr))
			body, _ := proto.Marshal(testRequest)
			resp, err := c.Export(context.Background(), body)
			if err != nil {
				t.Fatal(err)
			}
			var r colltrace.ExportTraceServiceResponse
			if err := proto.Unmarshal(resp, &r); err != nil || r.GetPartialSuccess().GetRejectedSpans() != 2 || r.GetPartialSuccess().GetErrorMessage() != "too old" {
				t.Errorf("the answer %v (%v)", &r, err)
			}
			calls := s.got()
			if len(calls) != 1 {
				t.Fatalf("%d calls", len(calls))
			}
			got := calls[0]
			if d := cmp.Diff(testRequest, got.req, protocmp.Transform()); d != "" {
				t.Errorf("the request (-sent +received)\n%s", d)
			}
			if got.compression != tt.gzip || !got.deadline {
				t.Errorf("compression %q (want %q), deadline %v", got.compression, tt.gzip, got.deadline)
			}
			if v := got.md.Get("x-tenant"); len(v) != 1 || v[0] != "t 1" {
				t.Errorf("x-tenant %q", v)
			}
			if v := got.md.Get("authorization"); len(v) != 1 || v[0] != "k" {
				t.Errorf("authorization %q", v)
			}
			if v := got.md.Get("user-agent"); len(v) != 1 || !strings.HasPrefix(v[0], "OTel OTLP Exporter Go/") {
				t.Errorf("user-agent %q", v)
			}
		})
	}
}

func retryInfo(t *testing.T, c codes.Code, msg string, delay time.Duration) error {
	st, err := status.New(c, msg).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestGRPCStatuses(t *testing.T) {
	tests := []struct {
		name    string
		first   func(ctx context.Context) error // the first call's error; the second succeeds
		headers bool                            // the server sends headers before its error: not trailers-only
		calls   int
		waits   []time.Duration // nil: any one wait of the backoff
		code    int             // of the error when calls is 1
		message string
	}{
		{name: "a status error with a message, trailers-only", first: func(context.Context) error {
			return status.Error(codes.InvalidArgument, "bad 100% span: ünïcode\n")
		}, calls: 1, code: 3, message: "bad 100% span: ünïcode\n"},
		{name: "a status error after headers", headers: true, first: func(context.Context) error {
			return status.Error(codes.PermissionDenied, "not you")
		}, calls: 1, code: 7, message: "not you"},
		{name: "unavailable is retried", first: func(context.Context) error {
			return status.Error(codes.Unavailable, "busy")
		}, calls: 2},
		{name: "resource exhausted without RetryInfo is not", first: func(context.Context) error {
			return status.Error(codes.ResourceExhausted, "full")
		}, calls: 1, code: 8, message: "full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startGRPC(t, nil, func(ctx context.Context, n int) (*colltrace.ExportTraceServiceResponse, error) {
				if n > 0 {
					return &colltrace.ExportTraceServiceResponse{}, nil
				}
				if tt.headers {
					grpc.SendHeader(ctx, metadata.Pairs("x", "y"))
				}
				return nil, tt.first(ctx)
			})
			c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + s.addr})
			waits := recordWaits(c)
			_, err := c.Export(context.Background(), []byte{})
			if n := len(s.got()); n != tt.calls {
				t.Fatalf("%d calls, want %d (err %v)", n, tt.calls, err)
			}
			if tt.calls == 2 {
				if err != nil || len(*waits) != 1 {
					t.Fatalf("err %v, waits %v", err, *waits)
				}
				return
			}
			var ge *grpcError
			if !errors.As(err, &ge) || ge.code != tt.code || ge.message != tt.message {
				t.Fatalf("err %#v, want code %d message %q", err, tt.code, tt.message)
			}
		})
	}
}

func TestGRPCRetryInfoSetsTheDelay(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable} {
		s := startGRPC(t, nil, func(ctx context.Context, n int) (*colltrace.ExportTraceServiceResponse, error) {
			if n == 0 {
				return nil, retryInfo(t, code, "later", 17*time.Second)
			}
			return &colltrace.ExportTraceServiceResponse{}, nil
		})
		c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + s.addr})
		waits := recordWaits(c)
		if _, err := c.Export(context.Background(), []byte{}); err != nil {
			t.Fatal(err)
		}
		if len(*waits) != 1 || (*waits)[0] != 17*time.Second {
			t.Errorf("%v: waits %v, want [17s]", code, *waits)
		}
	}
}

func TestGRPCAnHTTPStatusIsMappedToACode(t *testing.T) {
	tests := []struct {
		status, code int
		calls        int
	}{
		{http.StatusNotFound, codeUnimplemented, 1},
		{http.StatusUnauthorized, codeUnauthenticated, 1},
		{http.StatusServiceUnavailable, codeUnavailable, 2},
	}
	for _, tt := range tests {
		var mu sync.Mutex
		n := 0
		srv, addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			w.WriteHeader(tt.status)
		}))
		c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr})
		waited := false
		c.wait = func(context.Context, time.Duration) error { // one retry at most
			if waited {
				return errors.New("enough")
			}
			waited = true
			return nil
		}
		_, err := c.Export(context.Background(), []byte{})
		srv.Close()
		mu.Lock()
		calls := n
		mu.Unlock()
		var ge *grpcError
		if !errors.As(err, &ge) || ge.code != tt.code || calls != tt.calls {
			t.Errorf("HTTP %d: err %v after %d calls, want code %d after %d", tt.status, err, calls, tt.code, tt.calls)
		}
	}
}

func TestGRPCTimeoutAndPercentDecoding(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{time.Nanosecond, "1n"}, {10 * time.Second, "10000000u"}, {100 * time.Second, "100000m"}, {30 * time.Hour, "108000S"}, {-time.Second, "1n"}} {
		if got := grpcTimeout(tt.d); got != tt.want {
			t.Errorf("grpcTimeout(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for in, want := range map[string]string{"a%20b": "a b", "100%": "100%", "%zz%41": "%zzA", "%C3%BC": "ü"} {
		if got := percentDecode(in); got != want {
			t.Errorf("percentDecode(%q) = %q, want %q", in, got, want)
		}
	}
}

// An export retried without end (a server always busy, the retries'
// own bound an hour) ends at the export timeout, after more than one
// call. The timeout is a second: at 100 ms a loaded CI machine once spent
// it all on the first call (its connection made), and the test saw one.
func TestGRPCTheTimeoutBoundsTheRetries(t *testing.T) {
	s := startGRPC(t, nil, func(context.Context, int) (*colltrace.ExportTraceServiceResponse, error) {
		return nil, status.Error(codes.Unavailable, "busy")
	})
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + s.addr, "OTEL_EXPORTER_OTLP_TIMEOUT": "1000"})
	c.retry = retryPolicy{initial: time.Millisecond, max: 2 * time.Millisecond, elapsed: time.Hour}
	_, err := c.Export(context.Background(), []byte{})
	if err == nil || !strings.Contains(err.Error(), "the export timeout passed") || len(s.got()) < 2 {
		t.Fatalf("err %v after %d calls", err, len(s.got()))
	}
}

type blockingTrace struct {
	colltrace.UnimplementedTraceServiceServer
	arrived chan struct{}
}

func (b blockingTrace) Export(ctx context.Context, _ *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	close(b.arrived)
	<-ctx.Done()
	return nil, ctx.Err()
}

// Close (the exporters' Shutdown) while a gRPC export is in flight ends
// the export and its HTTP/2 connection by the time Export returns (it
// stayed open for the idle timeout, 90 s).
func TestCloseDuringAGRPCExportClosesItsConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	bt := blockingTrace{arrived: make(chan struct{})}
	colltrace.RegisterTraceServiceServer(gs, bt)
	go gs.Serve(l)
	defer gs.Stop()
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String()})
	var mu sync.Mutex
	var dialed []net.Conn
	tr := c.hc.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			mu.Lock()
			dialed = append(dialed, conn)
			mu.Unlock()
		}
		return conn, err
	}
	go func() {
		<-bt.arrived
		c.Close()
	}()
	if _, err = c.Export(context.Background(), []byte{}); !errors.Is(err, errShutdown) {
		t.Errorf("export: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 {
		t.Fatalf("%d connections dialled", len(dialed))
	}
	// a closed connection refuses a deadline (net.ErrClosed)
	if err := dialed[0].SetReadDeadline(time.Time{}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the export's connection is open when Export returns (SetReadDeadline: %v)", err)
	}
}

// An answer whose gzip cannot be read is an error that wraps the gzip
// reader's (it was flattened to its text).
func TestGRPCAnUnreadableAnswerWrapsItsCause(t *testing.T) {
	_, addr := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Encoding", "gzip")
		w.Header().Set("Trailer", "Grpc-Status")
		w.Write(append([]byte{1, 0, 0, 0, 15}, "not gzip at all"...)) // compressed flag, not gzip
		w.Header().Set("Grpc-Status", "0")
	}))
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr})
	_, err := c.Export(context.Background(), []byte{})
	var ge *grpcError
	if !errors.Is(err, gzip.ErrHeader) || !errors.As(err, &ge) || ge.code != codeInternal {
		t.Fatalf("err %v: want an Internal status wrapping gzip.ErrHeader", err)
	}
}

// h2cServer serves h over plaintext HTTP/2 (prior knowledge, as an
// insecure gRPC client speaks it) on loopback until t ends: a server
// that answers as no gRPC server would.
func h2cServer(t *testing.T, h http.Handler) (*http.Server, string) {
	t.Helper()
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return srv, l.Addr().String()
}
