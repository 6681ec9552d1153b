package otlpwire

import (
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// splitFields is b's top-level fields, each whole, in their order.
func splitFields(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var recs [][]byte
	for len(b) > 0 {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			t.Fatalf("top-level field: %v", protowire.ParseError(n))
		}
		recs = append(recs, b[:n])
		b = b[n:]
	}
	return recs
}

// firstSpanName is the name of the first span of the one ResourceSpans in
// the request rec.
func firstSpanName(t testing.TB, rec []byte) string {
	t.Helper()
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(rec, &req); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	return req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetName()
}
