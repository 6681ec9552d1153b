package otlpwire

import (
	"strings"
	"testing"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// msg is the concatenation of fields.
func msg(fields ...[]byte) []byte {
	var b []byte
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func bytesField(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

// unknowns is one unknown field of each wire type, a group holding fields
// among them.
func unknowns() []byte {
	group := msg(protowire.AppendTag(nil, 9, protowire.StartGroupType),
		varintField(1, 5), bytesField(2, []byte("in group")),
		protowire.AppendTag(nil, 3, protowire.StartGroupType), protowire.AppendTag(nil, 3, protowire.EndGroupType),
		protowire.AppendTag(nil, 9, protowire.EndGroupType))
	return msg(
		varintField(7, 1<<63),
		protowire.AppendFixed32(protowire.AppendTag(nil, 8, protowire.Fixed32Type), 0xdeadbeef),
		protowire.AppendFixed64(protowire.AppendTag(nil, 10, protowire.Fixed64Type), 1),
		bytesField(11, []byte("unknown")),
		group,
	)
}

func TestReadPartialSuccessReadsWhatProtoUnmarshalReads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     []byte
		rejected int64
		message  string
	}{
		{"empty body", nil, 0, ""},
		{"empty partial success", bytesField(1, nil), 0, ""},
		{"both fields", bytesField(1, msg(varintField(1, 3), bytesField(2, []byte("3 spans too old")))), 3, "3 spans too old"},
		{"only a message", bytesField(1, bytesField(2, []byte("warning"))), 0, "warning"},
		{"negative count", bytesField(1, varintField(1, uint64(1<<64-5))), -5, ""},
		{"unknown fields around and inside", msg(unknowns(), bytesField(1, msg(unknowns(), varintField(1, 2), unknowns(), bytesField(2, []byte("m")))), unknowns()), 2, "m"},
		{"twice: merged, the last value of each field wins",
			msg(bytesField(1, msg(varintField(1, 1), bytesField(2, []byte("first")))), bytesField(1, varintField(1, 9))), 9, "first"},
		{"a field twice inside: the last wins", bytesField(1, msg(varintField(1, 1), varintField(1, 4))), 4, ""},
		{"partial success of another wire type: unknown", msg(varintField(1, 7)), 0, ""},
		{"count of another wire type: unknown", bytesField(1, bytesField(1, []byte{1})), 0, ""},
		{"long message", bytesField(1, bytesField(2, []byte(strings.Repeat("é", 300)))), 0, strings.Repeat("é", 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rejected, message, err := ReadPartialSuccess(tc.body)
			if err != nil || rejected != tc.rejected || message != tc.message {
				t.Errorf("ReadPartialSuccess = %d, %q, %v; want %d, %q, nil", rejected, message, err, tc.rejected, tc.message)
			}
			var tr coltrace.ExportTraceServiceResponse
			if err := proto.Unmarshal(tc.body, &tr); err != nil {
				t.Fatalf("proto.Unmarshal as a trace response: %v", err)
			}
			if got := tr.GetPartialSuccess(); got.GetRejectedSpans() != tc.rejected || got.GetErrorMessage() != tc.message {
				t.Errorf("proto.Unmarshal reads %d, %q: the table is wrong", got.GetRejectedSpans(), got.GetErrorMessage())
			}
			var mr colmetric.ExportMetricsServiceResponse
			if err := proto.Unmarshal(tc.body, &mr); err != nil {
				t.Fatalf("proto.Unmarshal as a metrics response: %v", err)
			}
			if got := mr.GetPartialSuccess(); got.GetRejectedDataPoints() != tc.rejected || got.GetErrorMessage() != tc.message {
				t.Errorf("proto.Unmarshal reads %d, %q: the table is wrong", got.GetRejectedDataPoints(), got.GetErrorMessage())
			}
		})
	}
}

func TestReadPartialSuccessOfOfficialResponses(t *testing.T) {
	tb, err := proto.Marshal(&coltrace.ExportTraceServiceResponse{PartialSuccess: &coltrace.ExportTracePartialSuccess{RejectedSpans: 12, ErrorMessage: "dropped"}})
	if err != nil {
		t.Fatal(err)
	}
	mb, err := proto.Marshal(&colmetric.ExportMetricsServiceResponse{PartialSuccess: &colmetric.ExportMetricsPartialSuccess{RejectedDataPoints: 1 << 40, ErrorMessage: "too many"}})
	if err != nil {
		t.Fatal(err)
	}
	if n, m, err := ReadPartialSuccess(tb); n != 12 || m != "dropped" || err != nil {
		t.Errorf("trace response: %d, %q, %v; want 12, dropped", n, m, err)
	}
	if n, m, err := ReadPartialSuccess(mb); n != 1<<40 || m != "too many" || err != nil {
		t.Errorf("metrics response: %d, %q, %v; want 1<<40, too many", n, m, err)
	}
}

func TestReadPartialSuccessMakesAMessageThatIsNotUTF8WellFormed(t *testing.T) {
	body := bytesField(1, msg(varintField(1, 1), bytesField(2, []byte("a\xffb\xe2\x82"))))
	var tr coltrace.ExportTraceServiceResponse
	if err := proto.Unmarshal(body, &tr); err == nil {
		t.Error("proto.Unmarshal took a message that is not UTF-8: the difference this test pins is gone")
	}
	n, m, err := ReadPartialSuccess(body)
	if n != 1 || m != "a\uFFFDb\uFFFD\uFFFD" || err != nil {
		t.Errorf("ReadPartialSuccess = %d, %q, %v; want 1, %q, nil", n, m, err, "a\uFFFDb\uFFFD\uFFFD")
	}
}

func TestReadPartialSuccessOfAMalformedBodySaysWhatIsWrong(t *testing.T) {
	tooLong := append(bytesField(1, nil)[:1], 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"key cut", "\x8a", "field key at byte 0: truncated"},
		{"length past the end", string(bytesField(1, []byte("abc"))[:3]), "field 1 at byte 0 is 3 bytes long, 1 are left: truncated"},
		{"inner length past the end", string(bytesField(1, []byte{0x12, 0x05, 'a'})), "field 2 at byte 2 is 5 bytes long, 1 are left: truncated"},
		{"varint cut", "\x08\x80", "varint of field 1 at byte 0: truncated"},
		{"length varint over 10 bytes", string(tooLong), "length of field 1 at byte 0: varint overflows 64 bits"},
		{"varint over 64 bits", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", "varint of field 1 at byte 0: varint overflows 64 bits"},
		{"field number 0", "\x00\x00", "field key at byte 0: field number 0 is out of range"},
		{"wire type 6", "\x0e", "field 1 at byte 0 has wire type 6"},
		{"end group with no start", "\x0c", "field 1 at byte 0 has wire type 4"},
		{"group never ended", "\x0b\x08\x01", "group field 1 at byte 0: no end of group: truncated"},
		{"group ended by another field", "\x0b\x14", "group field 1 at byte 0: group ends with field 2, not 1"},
		{"field number 0 inside a group", "\x0b\x00\x00\x0c", "group field 1 at byte 0: field number 0 is out of range"},
		{"groups nested past the protobuf runtime's limit", strings.Repeat("\x0b", 10002), "groups nested deeper than 10000"},
		{"fixed64 cut", "\x09\x01\x02", "fixed64 field 1 at byte 0: truncated"},
		{"fixed32 cut", "\x0d\x01", "fixed32 field 1 at byte 0: truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr coltrace.ExportTraceServiceResponse
			if err := proto.Unmarshal([]byte(tc.body), &tr); err == nil {
				t.Errorf("proto.Unmarshal took %x: the table is wrong", tc.body)
			}
			n, m, err := ReadPartialSuccess([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadPartialSuccess(%x) = %d, %q, %v; want an error saying %q", tc.body, n, m, err, tc.want)
			}
			if n != 0 || m != "" {
				t.Errorf("ReadPartialSuccess(%x) returned %d, %q with its error, want zeros", tc.body, n, m)
			}
		})
	}
}

// FuzzReadPartialSuccess holds ReadPartialSuccess to proto.Unmarshal of both
// response types: the same values where it succeeds, an error where it
// fails, except that a message that is not UTF-8 is made well formed.
func FuzzReadPartialSuccess(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytesField(1, msg(varintField(1, 3), bytesField(2, []byte("m")))))
	f.Add(msg(unknowns(), bytesField(1, unknowns())))
	f.Add(bytesField(1, bytesField(2, []byte("\xff"))))
	f.Add(msg(bytesField(1, msg(varintField(1, 3), bytesField(2, []byte("a\xff")))), bytesField(1, varintField(1, 5))))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, m, err := ReadPartialSuccess(body)
		var tr coltrace.ExportTraceServiceResponse
		terr := proto.Unmarshal(body, &tr)
		var mr colmetric.ExportMetricsServiceResponse
		merr := proto.Unmarshal(body, &mr)
		if (terr == nil) != (merr == nil) {
			t.Fatalf("the two response types disagree: %v, %v", terr, merr)
		}
		if terr != nil {
			if strings.Contains(terr.Error(), "invalid UTF-8") && err == nil {
				// the intended difference: the values must still be
				// proto's, the message made well formed
				ln, lm, lerr := lenientPartialSuccess(body)
				if lerr != nil || n != ln || m != wellFormedRunes(lm) {
					t.Fatalf("ReadPartialSuccess = %d, %q; proto.Unmarshal with the message as bytes: %d, %q, %v", n, m, ln, lm, lerr)
				}
				return
			}
			if err == nil {
				t.Fatalf("proto.Unmarshal fails (%v), ReadPartialSuccess read %d, %q", terr, n, m)
			}
			return
		}
		if err != nil {
			t.Fatalf("proto.Unmarshal reads it, ReadPartialSuccess: %v", err)
		}
		if ps := tr.GetPartialSuccess(); n != ps.GetRejectedSpans() || m != ps.GetErrorMessage() {
			t.Fatalf("ReadPartialSuccess = %d, %q; proto.Unmarshal %d, %q", n, m, ps.GetRejectedSpans(), ps.GetErrorMessage())
		}
	})
}

// nestedGroups is n groups of field 5, each in the one before.
func nestedGroups(n int) []byte {
	var b []byte
	for range n {
		b = protowire.AppendTag(b, 5, protowire.StartGroupType)
	}
	for range n {
		b = protowire.AppendTag(b, 5, protowire.EndGroupType)
	}
	return b
}

// Groups nest as deep as proto.Unmarshal lets them, no less, no more: at
// the top level and inside partial_success.
func TestGroupsNestAsDeepAsProtoUnmarshalAllows(t *testing.T) {
	for _, inner := range []bool{false, true} {
		for _, n := range []int{9998, 9999, 10000, 10001, 10002} {
			body := nestedGroups(n)
			if inner {
				body = bytesField(1, body)
			}
			var tr coltrace.ExportTraceServiceResponse
			perr := proto.Unmarshal(body, &tr)
			_, _, err := ReadPartialSuccess(body)
			if (perr == nil) != (err == nil) {
				t.Errorf("inner=%v %d nested groups: proto.Unmarshal %v, ReadPartialSuccess %v", inner, n, perr, err)
			}
		}
	}
}

// lenientResponse is ExportTraceServiceResponse with its error_message
// typed bytes: proto.Unmarshal reads into it what it refuses to read into
// the real type for want of UTF-8.
var lenientResponse = func() protoreflect.MessageDescriptor {
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("lenient.proto"), Package: proto.String("lenient"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Response"), Field: []*descriptorpb.FieldDescriptorProto{
				field("partial_success", 1, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".lenient.Partial")}},
			{Name: proto.String("Partial"), Field: []*descriptorpb.FieldDescriptorProto{
				field("rejected", 1, descriptorpb.FieldDescriptorProto_TYPE_INT64, ""),
				field("error_message", 2, descriptorpb.FieldDescriptorProto_TYPE_BYTES, "")}},
		},
	}, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().ByName("Response")
}()

// lenientPartialSuccess is what proto.Unmarshal reads from body into
// lenientResponse.
func lenientPartialSuccess(body []byte) (int64, string, error) {
	m := dynamicpb.NewMessage(lenientResponse)
	if err := proto.Unmarshal(body, m); err != nil {
		return 0, "", err
	}
	ps := m.Get(lenientResponse.Fields().ByNumber(1)).Message()
	pd := ps.Descriptor().Fields()
	return ps.Get(pd.ByNumber(1)).Int(), string(ps.Get(pd.ByNumber(2)).Bytes()), nil
}

// wellFormedRunes is s made well formed as string([]rune(s)) makes it.
func wellFormedRunes(s string) string { return string([]rune(s)) }

// The oracle of FuzzReadPartialSuccess for a message that is not UTF-8
// reads what proto.Unmarshal reads.
func TestLenientPartialSuccessReadsTheBytes(t *testing.T) {
	n, m, err := lenientPartialSuccess(bytesField(1, msg(varintField(1, 7), bytesField(2, []byte("a\xffb")))))
	if err != nil || n != 7 || m != "a\xffb" {
		t.Fatalf("%d, %q, %v", n, m, err)
	}
}
