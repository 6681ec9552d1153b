package history

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/myelin-run/myelin/result"
)

// sameDecoderAsEncodingJSON: a Decoder (shared, d) reads b to what
// encoding/json reads.
func sameDecoderAsEncodingJSON(t *testing.T, d *Decoder, b []byte) {
	t.Helper()
	var want Message
	wantErr := json.Unmarshal(b, &want)
	got, gotErr := d.Message(b, 0)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: encoding/json error %v, Decoder error %v", b, wantErr, gotErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n Decoder       %#v\n encoding/json %#v", b, got, want)
	}
}

// A key given twice (usage, parts, images: encoding/json decodes the
// second into the first) is read as encoding/json reads it: the fast
// reader leaves such text to it.
func TestADuplicatedKeyIsReadAsEncodingJSONReadsIt(t *testing.T) {
	for _, raw := range []string{
		`{"role":"assistant","usage":{"input":1},"usage":{"output":2}}`,
		`{"role":"user","parts":[{"type":"text","text":"a"}],"parts":[{"type":"text"}]}`,
		`{"role":"user","parts":[{"type":"tool_result","images":[{"mime_type":"image/png","data":"AA=="}],"images":[{"data":"AA=="}]}]}`,
	} {
		t.Run(raw, func(t *testing.T) {
			var d Decoder
			sameDecoderAsEncodingJSON(t, &d, []byte(raw))
		})
	}
}

// A time that is not RFC 3339 as time.Time reads it, or written with an
// escape (which time.Time's UnmarshalJSON refuses), is refused as
// encoding/json refuses it.
func TestATimeIsReadAsEncodingJSONReadsIt(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","parts":[],"time":"2026-12-02T6:05:04Z"}`,
		`{"role":"user","parts":[],"time":"2026-12-02T16:05:04,5Z"}`,
		`{"role":"user","parts":[],"time":"\u0032026-12-02T16:05:04Z"}`,
	} {
		t.Run(raw, func(t *testing.T) {
			var d Decoder
			sameDecoderAsEncodingJSON(t, &d, []byte(raw))
		})
	}
}

// A message of many parts costs the Decoder as many bytes as the parts
// take, give or take a small factor, not a copy of all the parts so far
// for every part past the 256th.
func TestDecoderManyPartsAllocatesLinearly(t *testing.T) {
	const n = 3000
	m := Message{Role: Assistant}
	for i := range n {
		m.Parts = append(m.Parts, Part{Type: ToolCallPart, CallID: fmt.Sprint("c", i), Name: "x", Input: json.RawMessage(`{}`)})
	}
	raw, err := result.JSON(m)
	if err != nil {
		t.Fatal(err)
	}
	measure := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	each := measure(func() {
		if _, err := DecodeMessage(raw); err != nil {
			t.Fatal(err)
		}
	})
	dec := measure(func() {
		var d Decoder
		if _, err := d.Message(raw, len(raw)); err != nil {
			t.Fatal(err)
		}
	})
	partsBytes := uint64(n) * uint64(unsafe.Sizeof(Part{}))
	t.Logf("%d parts (%d bytes stored, %d bytes of Parts): DecodeMessage allocated %d bytes, Decoder %d", n, len(raw), partsBytes, each, dec)
	if dec > 8*partsBytes+4*uint64(len(raw)) {
		t.Fatalf("a Decoder reading one message of %d parts allocated %d bytes (DecodeMessage: %d), over 8× the %d bytes its parts take: quadratic growth of the parts buffer (moreParts)", n, dec, each, partsBytes)
	}
}

// A message handed out by a Decoder keeps its bytes as read while the
// same Decoder reads many more messages, and while a caller changes a
// part's Input in place or appends to its Images or parts.
func TestDecoderCallersWritesStayInTheirOwnMessage(t *testing.T) {
	var raws [][]byte
	for i := range 2000 {
		m := Message{Role: User, Parts: []Part{
			{Type: ToolCallPart, CallID: fmt.Sprint("c", i), Name: "n", Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Raw: json.RawMessage(`{"r":1}`)},
			{Type: ToolResultPart, Text: strings.Repeat("t", i%300), Images: []result.Image{{MIMEType: "image/png", Data: []byte("abc")}}},
		}}
		raw, _ := result.JSON(m)
		raws = append(raws, raw)
	}
	var d Decoder
	got := decodeAll(t, &d, raws)
	// every caller writes to its own message: in place, and appending
	for i := range got {
		p := got[i].Parts
		for j := range p[0].Input {
			p[0].Input[j] = 'X'
		}
		_ = append(p[0].Input, "YYYY"...)
		_ = append(p[0].Raw, "YYYY"...)
		_ = append(p[1].Images, result.Image{MIMEType: "ZZZZ"})
		_ = append(p[1].Images[0].Data, "ZZZZ"...)
		_ = append(p, Part{Text: "WWWW"})
	}
	for i := range got {
		var want Message
		if err := json.Unmarshal(raws[i], &want); err != nil {
			t.Fatal(err)
		}
		want.Parts[0].Input = got[i].Parts[0].Input // written over by its own caller
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("message %d changed by writes to other messages:\n got %#v\nwant %#v", i, got[i], want)
		}
	}
}

// FuzzDecoderMessage holds a Decoder, shared across inputs (its
// buffers partly used), to encoding/json's answers.
func FuzzDecoderMessage(f *testing.F) {
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4},"time":"2026-12-02T16:05:04.123456789Z"}`))
	f.Add([]byte(`{"role":"user","parts":[],"time":"2026-12-02T16:05:04Z"}`))
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"reasoning","wire":"anthropic","text":"t","raw":{"type":"thinking","thinking":"t","signature":"s"}},{"type":"tool_call","call_id":"c","name":"n","input":{},"signature":"g"}],"time":"2026-12-02T16:05:04Z"}`))
	f.Add([]byte(`{"role":"user","parts":[{"type":"tool_result","call_id":"c","text":"a\u00e9\n","images":[{"mime_type":"image/png","data":"AAEC"}],"files":[{"path":"a","created":true}],"permission":{"decision":"allow","by":"rule"}}],"time":"2026-12-02T16:05:04+02:00"}`))
	var d Decoder
	var kept []Message
	var keptRaw [][]byte
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameDecoderAsEncodingJSON(t, &d, raw)
		if m, err := d.Message(raw, 0); err == nil && len(kept) < 64 {
			kept, keptRaw = append(kept, m), append(keptRaw, append([]byte(nil), raw...))
		}
		for i, m := range kept {
			var want Message
			json.Unmarshal(keptRaw[i], &want)
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("a message read before (%q) changed:\n got %#v\nwant %#v", keptRaw[i], m, want)
			}
		}
	})
}

// The same inputs through DecodeMessage (the path before the Decoder).
func TestDecodeMessageReadsADuplicatedKeyAsEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"role":"assistant","usage":{"input":1},"usage":{"output":2}}`,
		`{"role":"user","parts":[{"type":"text","text":"a"}],"parts":[{"type":"text"}]}`,
		`{"role":"user","parts":[{"type":"tool_result","images":[{"mime_type":"image/png","data":"AA=="}],"images":[{"data":"AA=="}]}]}`,
		`{"role":"user","parts":[],"time":"\u0032026-12-02T16:05:04Z"}`,
	} {
		t.Run(raw, func(t *testing.T) { sameMessageAsEncodingJSON(t, []byte(raw)) })
	}
}

// Messages past a buffer's size, and strings past 64 KiB, among small
// ones, read by one Decoder, each as encoding/json reads it.
func TestDecoderLongMessagesAmongShortOnes(t *testing.T) {
	var raws [][]byte
	for i := range 40 {
		text := fmt.Sprint("short ", i, " \"é\"")
		if i%7 == 3 {
			text = strings.Repeat("long\\\"é\n", 20000+i) // past 64 KiB stored and decoded
		}
		raw, _ := result.JSON(Message{Role: User, Parts: []Part{{Type: TextPart, Text: text}, {Type: ToolCallPart, Input: json.RawMessage(`{"a":"` + strings.Repeat("b", i*1000) + `"}`)}}})
		raws = append(raws, raw)
	}
	var d Decoder
	got := decodeAll(t, &d, raws)
	for i := range raws {
		var want Message
		json.Unmarshal(raws[i], &want)
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("message %d differs from encoding/json's", i)
		}
	}
}
