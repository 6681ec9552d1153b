package otlpwire

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The bits of a Span's and a Link's flags above the W3C trace flags
// (opentelemetry.proto.trace.v1.SpanFlags).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// AppendSpans appends to dst the protobuf encoding of an
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest carrying
// spans, grouped by resource then instrumentation scope as the official
// exporters group them, and returns the extended slice. Nil spans are
// skipped; with no span it appends nothing (the empty request). Strings that
// are not valid UTF-8 are written made well formed (see the package doc).
// It does no I/O and keeps no reference to spans or dst; a caller that sends
// batches in turn should pass the last buffer back as dst[:0] (it then
// allocates only for slice-valued attributes and the grouping).
func AppendSpans(dst []byte, spans []sdktrace.ReadOnlySpan) []byte {
	for _, g := range groupSpans(spans) {
		dst = appendResourceSpans(dst, g)
	}
	return dst
}

// resourceGroup is the spans of one resource, by scope in the order the
// scopes first come.
type resourceGroup struct {
	first  sdktrace.ReadOnlySpan // gives the resource and its schema URL
	scopes []scopeGroup
}

// scopeGroup is the spans of one scope of one resource, in their order.
type scopeGroup struct {
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

// groupSpans groups spans by resource (the resource's equivalent attribute
// set: the first span's resource stands for the group, as in the official
// transform) and, within a resource, by the whole instrumentation scope.
func groupSpans(spans []sdktrace.ReadOnlySpan) []resourceGroup {
	type scopeKey struct {
		r  attribute.Distinct
		is instrumentation.Scope
	}
	var groups []resourceGroup
	byResource := map[attribute.Distinct]int{}
	byScope := map[scopeKey]int{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		ri, ok := byResource[rk]
		if !ok {
			ri = len(groups)
			byResource[rk] = ri
			groups = append(groups, resourceGroup{first: s})
		}
		g := &groups[ri]
		sk := scopeKey{r: rk, is: s.InstrumentationScope()}
		si, ok := byScope[sk]
		if !ok {
			si = len(g.scopes)
			byScope[sk] = si
			g.scopes = append(g.scopes, scopeGroup{scope: sk.is})
		}
		g.scopes[si].spans = append(g.scopes[si].spans, s)
	}
	return groups
}

// appendResourceSpans appends g as the ResourceSpans field (1) of the
// request: resource (1, absent when the span's resource is nil), scope spans
// (2), schema URL (3).
func appendResourceSpans(b []byte, g resourceGroup) []byte {
	b, start := beginMessage(b, 1)
	r := g.first.Resource()
	if r != nil {
		b = appendResource(b, 1, r)
	}
	for _, sg := range g.scopes {
		b = appendScopeSpans(b, sg)
	}
	b = appendStringField(b, 3, r.SchemaURL())
	return endMessage(b, start)
}

// appendScopeSpans appends sg as a ScopeSpans field (2): scope (1, absent for
// the zero scope), spans (2), schema URL (3).
func appendScopeSpans(b []byte, sg scopeGroup) []byte {
	b, start := beginMessage(b, 2)
	if sg.scope != (instrumentation.Scope{}) {
		b = appendScope(b, 1, sg.scope)
	}
	for _, s := range sg.spans {
		b = appendSpan(b, s)
	}
	b = appendStringField(b, 3, sg.scope.SchemaURL)
	return endMessage(b, start)
}

// appendSpan appends s as a Span field (2) of a ScopeSpans, its fields in
// number order.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	b, start := beginMessage(b, 2)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytesField(b, 1, tid[:])
	b = appendBytesField(b, 2, sid[:])
	b = appendStringField(b, 3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytesField(b, 4, psid[:])
	}
	b = appendStringField(b, 5, s.Name())
	b = appendVarintField(b, 6, uint64(spanKind(s.SpanKind())))
	b = appendFixed64Field(b, 7, unixNano(s.StartTime()))
	b = appendFixed64Field(b, 8, unixNano(s.EndTime()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendVarintField(b, 10, uint64(clampUint32(s.DroppedAttributes())))
	for _, e := range s.Events() {
		b = appendEvent(b, e)
	}
	b = appendVarintField(b, 12, uint64(clampUint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		b = appendLink(b, l)
	}
	b = appendVarintField(b, 14, uint64(clampUint32(s.DroppedLinks())))
	b = appendStatus(b, s.Status())
	b = appendFixed32Field(b, 16, spanFlags(sc.TraceFlags(), parent))
	return endMessage(b, start)
}

// appendEvent appends e as a Span.Event field (11): time (1), name (2),
// attributes (3), dropped attributes (4).
func appendEvent(b []byte, e sdktrace.Event) []byte {
	b, start := beginMessage(b, 11)
	b = appendFixed64Field(b, 1, unixNano(e.Time))
	b = appendStringField(b, 2, e.Name)
	b = appendKeyValues(b, 3, e.Attributes)
	b = appendVarintField(b, 4, uint64(clampUint32(e.DroppedAttributeCount)))
	return endMessage(b, start)
}

// appendLink appends l as a Span.Link field (13): trace id (1), span id (2),
// attributes (4), dropped attributes (5), flags (6). The official transform
// does not write the linked context's trace state (3); neither does this.
func appendLink(b []byte, l sdktrace.Link) []byte {
	b, start := beginMessage(b, 13)
	tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
	b = appendBytesField(b, 1, tid[:])
	b = appendBytesField(b, 2, sid[:])
	b = appendKeyValues(b, 4, l.Attributes)
	b = appendVarintField(b, 5, uint64(clampUint32(l.DroppedAttributeCount)))
	b = appendFixed32Field(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
	return endMessage(b, start)
}

// appendStatus appends the Status field (15), always present: message (2),
// code (3).
func appendStatus(b []byte, st sdktrace.Status) []byte {
	b, start := beginMessage(b, 15)
	b = appendStringField(b, 2, st.Description)
	var code uint64 // STATUS_CODE_UNSET
	switch st.Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	b = appendVarintField(b, 3, code)
	return endMessage(b, start)
}

// spanKind is the OTLP Span.SpanKind of k: the same numbers for the kinds
// the API defines, SPAN_KIND_UNSPECIFIED for any other.
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient,
		trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 0
}

// spanFlags is the W3C trace flags with the bit that says whether the
// context's remoteness is known (always) and the bit that says it is remote.
func spanFlags(tf trace.TraceFlags, sc trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if sc.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// unixNano is t in nanoseconds since the epoch, 0 for a time before it.
func unixNano(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}

// clampUint32 is v limited to the range of a uint32.
func clampUint32(v int) uint32 {
	if v < 0 {
		return 0
	}
	if int64(v) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}
