package otlpwire

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestAppendStringReplacesEachByteThatBeginsNoUTF8SequenceWithU_FFFD(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"valid is kept", "héllo ✓ \uFFFD", "héllo ✓ \uFFFD"},
		{"empty", "", ""},
		{"one bad byte", "a\xffb", "a\uFFFDb"},
		{"a run of bad bytes: one each, not one for the run", "a\xff\xfe\xfdb", "a\uFFFD\uFFFD\uFFFDb"},
		{"truncated sequence: one per byte", "x\xe2\x82", "x\uFFFD\uFFFD"},
		{"truncated sequence then valid", "\xe2\x82\xe2\x82\xac", "\uFFFD\uFFFD€"},
		{"overlong encoding", "\xc0\x80", "\uFFFD\uFFFD"},
		{"surrogate half", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"beyond U+10FFFF", "\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"lone continuation bytes", "\x80\xbf", "\uFFFD\uFFFD"},
		{"long enough for a two-byte length", strings.Repeat("\xff", 100), strings.Repeat("\uFFFD", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want != string([]rune(tc.in)) {
				t.Fatalf("the table's want %q is not string([]rune(in)) %q: the rule is that conversion's", tc.want, string([]rune(tc.in)))
			}
			b := appendString(nil, 1, tc.in)
			num, typ, n := protowire.ConsumeTag(b)
			if num != 1 || typ != protowire.BytesType {
				t.Fatalf("appendString wrote field %d type %d, want 1 bytes", num, typ)
			}
			got, m := protowire.ConsumeString(b[n:])
			if m < 0 || n+m != len(b) {
				t.Fatalf("appendString wrote %x: not one length-delimited field", b)
			}
			if got != tc.want {
				t.Errorf("appendString(%q) wrote %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// bad is s with bytes that are not UTF-8 added.
func bad(s string) string { return s + "\xff\xc0" + s }

// fixed is bad(s) made well formed by this package's rule.
func fixed(s string) string { return string([]rune(bad(s))) }

// stringsSpans is spans holding str(…) in every string field a caller can
// set that AppendSpans writes.
func stringsSpans(t testing.TB, str func(string) string) []sdktrace.ReadOnlySpan {
	t.Helper()
	attrs := []attribute.KeyValue{
		attribute.String(str("key"), str("value")),
		attribute.StringSlice("slice", []string{str("one"), "two"}),
	}
	res := resource.NewWithAttributes(str("https://schema"), attrs...)
	scope := instrumentation.Scope{Name: str("name"), Version: str("version"), SchemaURL: str("https://scope"),
		Attributes: attribute.NewSet(attrs...)}
	s := tracetest.SpanStub{
		Name:        str("span"),
		SpanContext: spanContext(t, traceA, 1, true, false, ""),
		StartTime:   base,
		EndTime:     base.Add(time.Second),
		Attributes:  attrs,
		Events:      []sdktrace.Event{{Name: str("event"), Time: base, Attributes: attrs}},
		Links:       []sdktrace.Link{{SpanContext: spanContext(t, traceB, 2, false, true, ""), Attributes: attrs}},
		Status:      sdktrace.Status{Code: codes.Error, Description: str("status")},
		Resource:    res, InstrumentationScope: scope,
	}
	return []sdktrace.ReadOnlySpan{s.Snapshot()}
}

// stringsMetrics is metrics holding str(…) in every string field a caller
// can set that AppendMetrics writes.
func stringsMetrics(str func(string) string) *metricdata.ResourceMetrics {
	kvs := []attribute.KeyValue{attribute.String(str("key"), str("value")), attribute.StringSlice("slice", []string{str("one")})}
	set := attribute.NewSet(kvs...)
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes(str("https://schema"), kvs...),
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: instrumentation.Scope{Name: str("name"), Version: str("version"), SchemaURL: str("https://scope"), Attributes: set},
			Metrics: []metricdata.Metrics{{
				Name: str("metric"), Description: str("description"), Unit: str("unit"),
				Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{
					Attributes: set, Value: 1,
					Exemplars: []metricdata.Exemplar[int64]{{FilteredAttributes: kvs, Value: 1}},
				}}},
			}},
		}},
	}
}

func TestTheOfficialExportersFailTheWholeBatchOnAStringThatIsNotUTF8(t *testing.T) {
	body, err := newOfficialTracer(t).export(t, stringsSpans(t, bad))
	if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") || body != nil {
		t.Errorf("official trace exporter: posted %d bytes, error %v; want nothing posted and an invalid UTF-8 error", len(body), err)
	}
	body, err = officialMetrics(t, stringsMetrics(bad))
	if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") || body != nil {
		t.Errorf("official metric exporter: posted %d bytes, error %v; want nothing posted and an invalid UTF-8 error", len(body), err)
	}
}

func TestAppendSpansWritesAStringThatIsNotUTF8MadeWellFormed(t *testing.T) {
	official, err := newOfficialTracer(t).export(t, stringsSpans(t, fixed))
	if err != nil {
		t.Fatalf("official exporter of the well-formed strings: %v", err)
	}
	requireSameTraceRequest(t, AppendSpans(nil, stringsSpans(t, bad)), official)
}

func TestAppendMetricsWritesAStringThatIsNotUTF8MadeWellFormed(t *testing.T) {
	official, err := officialMetrics(t, stringsMetrics(fixed))
	if err != nil {
		t.Fatalf("official exporter of the well-formed strings: %v", err)
	}
	ours, err := AppendMetrics(nil, stringsMetrics(bad))
	if err != nil {
		t.Fatalf("AppendMetrics: %v", err)
	}
	requireSameMetricsRequest(t, ours, official)
}

// The trace state is the one string of a span this package cannot be handed
// badly: trace.ParseTraceState refuses what is not in its ASCII grammar.
func TestATraceStateCannotHoldBytesThatAreNotUTF8(t *testing.T) {
	if _, err := trace.ParseTraceState("k=" + bad("v")); err == nil {
		t.Fatal("ParseTraceState took bytes that are not UTF-8: AppendSpans must make the trace state well formed too")
	}
}
