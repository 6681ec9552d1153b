package history

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
)

// sameAsEncodingJSON checks decodeParts against json.Unmarshal on b.
func sameAsEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	var want []Part
	wantErr := json.Unmarshal(b, &want)
	got, gotErr := decodeParts(b)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: encoding/json error %v, decodeParts error %v", b, wantErr, gotErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
	}
}

func TestDecodePartsReadsWhatTheStoreWrites(t *testing.T) {
	for _, parts := range [][]Part{
		nil,
		{},
		sampleMessages()[1].Parts,
		sampleMessages()[2].Parts,
		{{Type: TextPart, Text: "esc \" \\ / \b\f\n\r\t \x00\x1f <&> \u2028 é 😀"}},
		{{Type: ToolCallPart, CallID: "c", Name: "n", Input: json.RawMessage(`{"a":[1,{"b":"]}"}],"c":null}`)}},
		{{Type: ToolResultPart, Images: []result.Image{{MIMEType: "image/png", Data: []byte{}}, {MIMEType: "", Data: []byte("x")}}}},
	} {
		b, err := result.JSON(parts)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fastParts(b); !ok {
			t.Errorf("the fast path refused what the store writes: %s", b)
		}
		sameAsEncodingJSON(t, b)
	}
	for _, raw := range []string{
		`[{"type":"text","text":"\ud83d\ude00 \ud800 \udc00x"}]`,
		`[{"type":"text","unknown":1}]`,
		`[{"text":null}]`,
		`[{"input":null}]`,
		`[{"is_error":1}]`,
		`[] x`,
		`{"type":"text"}`,
		`[{"type":"text","text":"a"},]`,
	} {
		sameAsEncodingJSON(t, []byte(raw))
	}
}

// FuzzDecodeParts holds decodeParts to encoding/json's answers, on what the
// store writes and on any bytes. Seeds: testdata/fuzz/FuzzDecodeParts.
func FuzzDecodeParts(f *testing.F) {
	f.Add("text\n\"q\"", "call_1", []byte(`{"a":1}`), true, []byte("\x89PNG"), []byte(`[{"type":"text","text":"x"}]`))
	f.Add("", "", []byte(`[]`), false, []byte{}, []byte(`[{"input":{"a":"}"}}]`))
	f.Fuzz(func(t *testing.T, text, id string, input []byte, isErr bool, img []byte, raw []byte) {
		p := Part{Type: ToolResultPart, Text: text, CallID: id, IsError: isErr, Images: []result.Image{{MIMEType: "image/png", Data: img}}}
		if json.Valid(input) {
			p.Input = input
		}
		if b, err := result.JSON([]Part{p, {Type: TextPart, Text: id}}); err == nil {
			sameAsEncodingJSON(t, b)
		}
		sameAsEncodingJSON(t, raw)
	})
}

func sameMessageAsEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	var want Message
	wantErr := json.Unmarshal(b, &want)
	got, gotErr := decodeMessage(b)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: encoding/json error %v, decodeMessage error %v", b, wantErr, gotErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
	}
}

func TestDecodeMessageReadsWhatTheStoreWrites(t *testing.T) {
	cut := Message{Role: Assistant, Cut: true, Parts: []Part{{Type: TextPart, Text: "Hello"}, {Type: TextPart, Text: "\n\n[cut off here]"}}}
	for _, m := range append(sampleMessages(), cut) {
		m.Time = time.Date(2026, 12, 2, 16, 5, 4, 123456789, time.UTC)
		b, err := result.JSON(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fastMessage(b); !ok {
			t.Errorf("the fast path refused what the store writes: %s", b)
		}
		sameMessageAsEncodingJSON(t, b)
	}
	for _, raw := range []string{
		`{}`, `{"role":"user",}`, `{"role":"user" "parts":[]}`, `{"usage":{"input":1,}}`,
		`{"usage":{"input":-1}}`, `{"usage":{"input":1.5}}`, `{"usage":{"input":01}}`,
		`{"time":"yesterday"}`, `{"parts":null}`, `{"role":"user","extra":1}`,
		`{"parts":[{"images":[{"mime_type":"a",}]}]}`, `{"parts":[{"images":[{}]}]}`,
		`{"cut":true}`, `{"cut":false}`, `{"cut":1}`, `{"cut":tru}`, `{"cut":"true"}`, `{"cut":null}`,
	} {
		sameMessageAsEncodingJSON(t, []byte(raw))
	}
}

// FuzzDecodeMessage holds decodeMessage to encoding/json's answers.
// Seeds: testdata/fuzz/FuzzDecodeMessage.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4},"time":"2026-12-02T16:05:04.123456789Z"}`))
	f.Add([]byte(`{"role":"user","parts":[],"time":"2026-12-02T16:05:04Z"}`))
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"text","text":"Hel"}],"time":"2026-12-02T16:05:04Z","cut":true}`))
	f.Fuzz(func(t *testing.T, raw []byte) { sameMessageAsEncodingJSON(t, raw) })
}
