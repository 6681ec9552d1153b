package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// A header pair written as HTTP writes it ("name: value"), or a name
// holding the secret, is refused by its position and what is wrong with
// it: never its name or value (an API key would end up in the logs).
func TestAHeaderErrorNamesThePairByPositionNeverItsText(t *testing.T) {
	for _, tt := range []struct{ v, want string }{
		{"Authorization: Bearer sk-live-SECRET", "pair 1 has no '='"},
		{"a=1,x-honeycomb-team:SECRET", "pair 2 has no '='"},
		{"api-key SECRET=", "pair 1: the name is not a header name"},
		{"a=1,,b=%zzSECRET", "pair 3: the value has a bad %-escape"},
		{"SECRETKEY=x%0ASECRET", "pair 1: the value holds a control character"},
	} {
		_, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": tt.v}), noFiles, Traces, HTTPProtobuf)
		if err == nil {
			t.Fatalf("%q: no error", tt.v)
		}
		if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_HEADERS") {
			t.Errorf("%q: err %v, want one saying %q without the pair's text", tt.v, err, tt.want)
		}
	}
}

// A trailing comma or an empty pair loses nothing: it is skipped, as the
// official skips it, and the other headers are sent.
func TestAnEmptyHeaderPairIsSkipped(t *testing.T) {
	for _, v := range []string{"api-key=k,", "api-key=k, ,x=1", ",api-key=k"} {
		c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": v}), noFiles, Traces, HTTPProtobuf)
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if c.Headers["api-key"] != "k" || len(c.Headers) > 2 {
			t.Errorf("%q: headers %v", v, c.Headers)
		}
	}
}

// Traces over gRPC to their own endpoint, metrics over HTTP to a base URL
// with a path: the generic endpoint is overridden for traces, so its path
// is no error of theirs (the official takes it).
func TestAGRPCPathIsCheckedOnlyOnTheEndpointThatWins(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4318/otlp",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
	}
	c, err := FromEnv(envOf(env), noFiles, Traces, GRPC)
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://collector:4317" {
		t.Errorf("URL %q", c.URL)
	}
	env = map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://collector:4317",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317/otlp",
	}
	if _, err := FromEnv(envOf(env), noFiles, Traces, GRPC); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		t.Errorf("a path on the winning endpoint: err %v", err)
	}
}

// A gRPC endpoint without a port is dialled on 443, as gRPC-Go does, even
// when it is http (insecure).
func TestAGRPCEndpointWithoutAPortIs443AsGRPCGo(t *testing.T) {
	for _, ep := range []string{"http://collector", "https://collector", "http://collector/"} {
		c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}), noFiles, Traces, GRPC)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(c.URL, "://collector:443") {
			t.Errorf("%s: URL %q", ep, c.URL)
		}
	}
	c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector"}), noFiles, Traces, HTTPProtobuf)
	if err != nil || c.URL != "http://collector/v1/traces" {
		t.Errorf("http/protobuf keeps the URL's default port: %q, %v", c.URL, err)
	}
}

// A bad signal timeout is reported and the generic one kept, as the
// official (it applies the generic, then fails to read the signal's).
func TestABadSignalTimeoutKeepsTheGenericOne(t *testing.T) {
	errs := handled(t)
	c, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "30000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "5s"}), noFiles, Traces, HTTPProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 30*time.Second || len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
		t.Errorf("timeout %v, reported %v; want the generic 30s and the signal's reported", c.Timeout, *errs)
	}
}

// The client certificate and key are read as pairs, as the official: the
// signal's pair when both are set, else the generic pair; a lone half
// beside a whole pair is reported and ignored.
func TestClientCertificateAndKeyAreReadAsPairs(t *testing.T) {
	pki, other := newPKI(t), newPKI(t)
	errs := handled(t)
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           "https://collector:4318",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.clientCert,
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.clientKey,
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY":  other.clientKey,
	}
	c, err := FromEnv(envOf(env), os.ReadFile, Traces, HTTPProtobuf)
	if err != nil {
		t.Fatalf("the official uses the generic pair: %v", err)
	}
	if c.TLS == nil || len(c.TLS.Certificates) != 1 || len(*errs) != 1 {
		t.Fatalf("TLS %+v, reported %v", c.TLS, *errs)
	}
	// the signal's whole pair wins over the generic one
	env["OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"] = other.clientCert
	env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = "testdata/missing.pem" // not read
	if _, err := FromEnv(envOf(env), os.ReadFile, Traces, HTTPProtobuf); err != nil {
		t.Fatalf("the signal's pair: %v", err)
	}
}

// A certificate with an insecure endpoint: the error names the variables
// at odds, the certificate's and the endpoint's (or INSECURE).
func TestACertificateWithAnInsecureEndpointNamesTheVariables(t *testing.T) {
	pki := newPKI(t)
	for _, tt := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_CERTIFICATE": pki.caFile},
			[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_CERTIFICATE"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": pki.clientCert, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": pki.clientKey},
			[]string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"}},
	} {
		_, err := FromEnv(envOf(tt.env), os.ReadFile, Traces, GRPC)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err %v, want one naming %s", tt.env, err, w)
			}
		}
	}
}

// An attempt that fails on a timeout of net/http's own (the TLS
// handshake's) while the attempt's context is live reads well: no
// "%!w(<nil>)".
func TestANetHTTPTimeoutErrorHasNoNilCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accepts, never answers the TLS handshake
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	c, err := New(Config{Signal: Traces, Protocol: HTTPProtobuf, URL: "https://" + l.Addr().String() + "/v1/traces", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.hc.Transport.(*http.Transport).TLSHandshakeTimeout = time.Millisecond // New's 10 s, shortened
	c.wait = func(context.Context, time.Duration) error { return errors.New("no retry in this test") }
	_, err = c.Export(context.Background(), []byte("x"))
	if err == nil || strings.Contains(err.Error(), "%!") {
		t.Fatalf("err %v", err)
	}
}

// An error body longer than the excerpt with a bad byte in its first
// bytes keeps its text (the bad byte shown as '?').
func TestAnExcerptKeepsTheTextAroundABadByte(t *testing.T) {
	body := append([]byte{0xff}, strings.Repeat("quota exceeded ", 30)...)
	if got := excerpt(body, 300); !strings.HasPrefix(got, "?quota exceeded") || !strings.HasSuffix(got, "…") {
		t.Errorf("excerpt %q", got)
	}
	// a rune cut in half at the end is dropped, not shown
	if got := excerpt([]byte("abé"), 3); got != "ab…" {
		t.Errorf("excerpt %q", got)
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
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Encoding", "gzip")
		w.Header().Set("Trailer", "Grpc-Status")
		w.Write(append([]byte{1, 0, 0, 0, 15}, "not gzip at all"...)) // compressed flag, not gzip
		w.Header().Set("Grpc-Status", "0")
	})}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	c := grpcClient(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String()})
	_, err = c.Export(context.Background(), []byte{})
	var ge *grpcError
	if !errors.Is(err, gzip.ErrHeader) || !errors.As(err, &ge) || ge.code != codeInternal {
		t.Fatalf("err %v: want an Internal status wrapping gzip.ErrHeader", err)
	}
}

// A batch of only nil spans encodes to nothing: nothing is posted, as
// the official posts nothing.
func TestABatchThatEncodesToNothingIsNotPosted(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	exp := NewSpanExporter(httpClient(t, s.URL, false), func(dst []byte, _ []sdktrace.ReadOnlySpan) []byte { return dst }, fakePartial)
	if err := exp.ExportSpans(context.Background(), make([]sdktrace.ReadOnlySpan, 2)); err != nil || s.count() != 0 {
		t.Fatalf("err %v, %d requests", err, s.count())
	}
}

// The exporters hand encode the last export's buffer, emptied (dst[:0]),
// as AppendSpans and AppendMetrics' docs ask, and send what it returns.
func TestTheExportersReuseTheirEncodingBuffer(t *testing.T) {
	s := newScripted(t, scripted{status: 200})
	var caps []int
	spans := NewSpanExporter(httpClient(t, s.URL, false), func(dst []byte, ss []sdktrace.ReadOnlySpan) []byte {
		caps = append(caps, cap(dst))
		if len(dst) != 0 {
			t.Errorf("dst holds %q", dst)
		}
		return encodeSpans(dst, ss)
	}, fakePartial)
	for range 2 {
		if err := spans.ExportSpans(context.Background(), paritySpans()); err != nil {
			t.Fatal(err)
		}
	}
	metrics := NewMetricExporter(metricClient(t, s.URL, Config{}), func(dst []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
		caps = append(caps, cap(dst))
		return append(dst, rm.ScopeMetrics[0].Metrics[0].Name...), nil
	}, fakePartial)
	for range 2 {
		if err := metrics.Export(context.Background(), parityMetrics()); err != nil {
			t.Fatal(err)
		}
	}
	if len(caps) != 4 || caps[0] != 0 || caps[1] == 0 || caps[2] != 0 || caps[3] == 0 {
		t.Errorf("capacities of dst %v, want [0 >0 0 >0]", caps)
	}
	if len(s.bodies) != 4 || !bytes.Equal(s.bodies[0], s.bodies[1]) || !bytes.Equal(s.bodies[2], s.bodies[3]) {
		t.Errorf("bodies %q", s.bodies)
	}
}

// A request body read after its attempt ended (net/http may, when the
// answer came first) reads nothing of the bytes, which may be reused.
func TestARequestBodyIsReleasedWhenItsAttemptEnds(t *testing.T) {
	g := &bodyGate{}
	r := g.reader([]byte("abcdef"))
	p := make([]byte, 3)
	if n, err := r.Read(p); n != 3 || err != nil {
		t.Fatalf("%d, %v", n, err)
	}
	g.close()
	if n, err := r.Read(p); n != 0 || !errors.Is(err, errBodyGone) {
		t.Fatalf("after the attempt: %d, %v", n, err)
	}
}
