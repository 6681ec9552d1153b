package collector

import (
	"context"
	"net"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The span exporter's buffer is reused once ExportSpans returns; a server
// that answers before it has read the request leaves net/http reading the
// body after Do returned. Under -race this fails when postHTTP posts the
// payload itself (bytes.NewReader) rather than through its bodyGate:
// TestARequestBodyIsReleasedWhenItsAttemptEnds tests the gate alone and
// passes whether postHTTP uses it or not. (From the second review.)
func TestTheSpanExportersReusedBufferIsNotReadAfterItsExport(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200) // the answer first, the body never read
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	c := httpClient(t, "http://"+l.Addr().String(), false)
	big := make([]byte, 3<<20) // under keepBuffer: the buffer is kept
	exp := NewSpanExporter(c, func(dst []byte, _ []sdktrace.ReadOnlySpan) []byte {
		dst = append(dst, big...)
		for i := range dst {
			dst[i] = byte(i) // writes the whole buffer, as an encoding does
		}
		return dst
	}, fakePartial)
	for range 5 {
		exp.ExportSpans(context.Background(), make([]sdktrace.ReadOnlySpan, 1))
	}
}
