package history

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/permission"
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
	// read into a Decoder's buffers, twice, the same parts, the first
	// left as they were by the second
	var d Decoder
	first, firstOK := fastPartsWith(b, &d)
	second, secondOK := fastPartsWith(b, &d)
	if firstOK != secondOK || (firstOK && wantErr != nil) {
		t.Fatalf("%q: encoding/json error %v; read into a Decoder ok %v, then %v", b, wantErr, firstOK, secondOK)
	}
	if firstOK && (!reflect.DeepEqual(first, want) || !reflect.DeepEqual(second, want)) {
		t.Fatalf("%q: read into a Decoder\n got %#v\nthen %#v\nwant %#v", b, first, second, want)
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
		{{Type: ReasoningPart, Wire: "anthropic", Text: "I think <&>", Raw: json.RawMessage(`{"type":"thinking","thinking":"I think <&> \"q\" }]","signature":"EqQB+/=="}`)},
			{Type: ReasoningPart, Wire: "anthropic", Raw: json.RawMessage(`{"type":"redacted_thinking","data":"xyz"}`)},
			{Type: ToolCallPart, CallID: "c", Name: "n", Input: json.RawMessage(`{}`), Wire: "gemini", Signature: "c2ln"}},
		{{Type: ToolResultPart, CallID: "c", Text: "denied", IsError: true, Permission: &permission.Record{Decision: "deny", By: "person", Answer: "deny", Reason: "not \"now\" <&>", At: time.Date(2026, 12, 5, 11, 0, 0, 5, time.UTC)}}},
		{{Type: ToolResultPart, CallID: "c", Text: "replaced a.txt", Files: []FileChange{{Path: "a.txt", Before: BlobHash([]byte("old")), After: BlobHash([]byte("new"))}, {Path: "dir/\"new\" <&>.txt", Created: true, After: BlobHash(nil)}, {Path: "big.bin"}}}},
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
		`[{"raw":null}]`, `[{"raw": {"a" : [1, 2]} ,"wire":"x"}]`, `[{"raw":"s"}]`, `[{"raw":{"a":}}]`, `[{"raw":1e5}]`,
		`[{"wire":1}]`, `[{"signature":null}]`, `[{"type":"reasoning","raw":{}}]`,
		`[{"is_error":1}]`,
		`[{"permission":null}]`, `[{"permission":{"decision":"allow"},"permission":{"by":"rule"}}]`, `[{"permission":{"at":"x"}}]`, `[{"permission":[]}]`, `[{"permission":{"decision":1}}]`,
		`[{"files":null}]`, `[{"files":[]}]`, `[{"files":{}}]`, `[{"files":[{"path":"a"}],"files":[{"path":"b"}]}]`, `[{"files":[],"files":[{"path":"b"}]}]`,
		`[{"files":[{"path":1}]}]`, `[{"files":[{"path":"a","created":"yes"}]}]`, `[{"files":[{"path":"a","extra":1}]}]`, `[{"files":[null]}]`, `[{"files":[{"path":"a"},]}]`,
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

// An answer whose usage counts one-hour cache writes, and whose settings
// name the one-hour cache, is read by the fast path (not the fallback) to
// what encoding/json reads; without them its stored bytes are what they
// were before either existed.
func TestDecodeMessageReadsTheOneHourCacheWrites(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 5, 4, 0, time.UTC)
	m := Message{Role: Assistant, Parts: []Part{{Type: TextPart, Text: "ok"}}, Time: at,
		Usage: &Usage{Input: 3, Output: 2, CacheRead: 10, CacheWrite: 7, CacheWrite1h: 5}}
	b, err := result.JSON(m)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := fastMessage(b)
	if !ok {
		t.Fatalf("the fast path refused a usage with cache_write_1h: %s", b)
	}
	if got.Usage == nil || *got.Usage != *m.Usage {
		t.Fatalf("read usage %+v from %s; want %+v", got.Usage, b, *m.Usage)
	}
	sameMessageAsEncodingJSON(t, b)
	m.Settings = &Settings{Model: "claude", System: "s", Tools: "t", CacheTTL: "1h"}
	if b, err = result.JSON(m); err != nil {
		t.Fatal(err)
	}
	back, err := decodeMessage(b)
	if err != nil || back.Settings == nil || *back.Settings != *m.Settings {
		t.Fatalf("settings read back %+v (%v) from %s; want %+v", back.Settings, err, b, *m.Settings)
	}
	m.Usage.CacheWrite1h, m.Settings.CacheTTL = 0, ""
	if b, err = result.JSON(m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"usage":{"input":3,"output":2,"cache_read":10,"cache_write":7}`, `"settings":{"model":"claude","system":"s","tools":"t"}`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("without one-hour writes or lifetime the message stores as %s; want it to hold %s as before", b, want)
		}
	}
}

func TestDecodeMessageReadsWhatTheStoreWrites(t *testing.T) {
	cut := Message{Role: Assistant, Cut: true, Parts: []Part{{Type: TextPart, Text: "Hello"}, {Type: TextPart, Text: "\n\n[cut off here]"}}}
	thought := Message{Role: Assistant, Parts: []Part{{Type: ReasoningPart, Wire: "anthropic", Text: "hm", Raw: json.RawMessage(`{"type":"thinking","thinking":"hm","signature":"s"}`)}, {Type: TextPart, Text: "ok"}}}
	for _, m := range append(sampleMessages(), cut, thought) {
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
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"usage":{"input":1,"output":2,"cache_read":3,"cache_write":4,"cache_write_1h":4},"time":"2026-12-02T16:05:04Z"}`))
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"reasoning","wire":"anthropic","text":"t","raw":{"type":"thinking","thinking":"t","signature":"s"}},{"type":"tool_call","call_id":"c","name":"n","input":{},"signature":"g"}],"time":"2026-12-02T16:05:04Z"}`))
	f.Add([]byte(`{"role":"assistant","parts":[{"type":"text","text":"Hel"}],"time":"2026-12-02T16:05:04Z","cut":true}`))
	f.Fuzz(func(t *testing.T, raw []byte) { sameMessageAsEncodingJSON(t, raw) })
}

// BenchmarkDecodeThinkingAnswer measures reading a stored answer that
// thought (a thinking block of 2,000 characters with its signature, text,
// a tool call) by the fast reader against encoding/json, its fallback,
// side by side in one run. Run:
//
//	go test ./history -run '^$' -bench DecodeThinkingAnswer -count 6
func BenchmarkDecodeThinkingAnswer(b *testing.B) {
	thinking := strings.Repeat("I should read the file first, then compare. ", 45)
	raw, err := result.JSON(Message{Role: Assistant, Parts: []Part{
		{Type: ReasoningPart, Wire: "anthropic", Text: thinking, Raw: json.RawMessage(`{"type":"thinking","thinking":"` + thinking + `","signature":"` + strings.Repeat("EqQBCkYIBRgC", 30) + `"}`)},
		{Type: TextPart, Text: "Let me read the next file."},
		{Type: ToolCallPart, CallID: "toolu_1", Name: "workspace--read", Input: []byte(`{"path":"src/main.go"}`)}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := fastMessage(raw); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			var m Message
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sampleMessages are storetest.SampleMessages (which this package's own
// tests cannot import: storetest imports history).
func sampleMessages() []Message {
	return []Message{
		{Role: User, Parts: []Part{{Type: TextPart, Text: "read <a.txt> & tell me"}}},
		{Role: Assistant, Usage: &Usage{Input: 10, Output: 5, CacheRead: 100, CacheWrite: 7}, Parts: []Part{
			{Type: TextPart, Text: "Reading it."},
			{Type: ToolCallPart, CallID: "toolu_1", Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)},
		}},
		{Role: User, Parts: []Part{
			{Type: ToolResultPart, CallID: "toolu_1", Text: "     1\ttab\there \"quoted\" \\ back\n[image: image/png, 4 bytes]", IsError: true,
				Images: []result.Image{{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}, SpillPath: ".myelin/tool-results/x.txt"},
		}},
	}
}

// A Decoder reads a conversation's stored messages to what DecodeMessage
// reads of each, every message's strings, inputs and parts its own: none
// is written over by a later message's, an append to a message's parts
// copies them, and the buffers (sized to what is still to come) leave
// nothing of one message in another's.
func TestDecoderReadsEachMessageAsDecodeMessage(t *testing.T) {
	var raws [][]byte
	var want []Message
	for i := range 700 {
		m := Message{Role: Assistant, Parts: []Part{{Type: TextPart, Text: strings.Repeat("é\n\"", i%7) + fmt.Sprint("text ", i)},
			{Type: ToolCallPart, CallID: fmt.Sprint("toolu_", i), Name: "workspace--read", Input: json.RawMessage(fmt.Sprintf(`{"path":"src/%d.go"}`, i))}}}
		if i%3 == 0 {
			m = Message{Role: User, Parts: []Part{{Type: ToolResultPart, CallID: fmt.Sprint("toolu_", i), Text: strings.Repeat("line\tof a file\n", i), IsError: i%2 == 0}}}
		}
		if i%50 == 0 {
			m.Parts = nil // a message of no parts among them
		}
		raw, err := result.JSON(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		raws, want = append(raws, raw), append(want, back)
	}
	var d Decoder
	got := decodeAll(t, &d, raws)
	for i := range raws {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("message %d, read by a Decoder then %d more:\n got %#v\nwant %#v", i, len(raws)-i-1, got[i], want[i])
		}
		if p := got[i].Parts; cap(p) != len(p) {
			t.Fatalf("message %d: its parts have room after them (%d of %d): an append would write into the next message's", i, len(p), cap(p))
		}
	}
	// a caller's append to one message's parts leaves the next's
	grown := append(got[1].Parts, Part{Type: TextPart, Text: "added"})
	if !reflect.DeepEqual(got[2], want[2]) || len(grown) != len(want[1].Parts)+1 {
		t.Fatalf("an append to message 1's parts changed message 2: %#v", got[2])
	}
}

// BenchmarkDecodeConversation reads back the stored messages of a
// conversation of 100,000 (an answer with a call, its result, over and
// over), kept as a store keeps them, one at a time by DecodeMessage
// (each-ms: an allocation per string and part list) and by one Decoder
// (decoder-ms: a few large buffers), both in every iteration, one after
// the other, so that both see the same load; each figure is the median.
// The collector's work on what each keeps is in the figures. Run:
//
//	go test ./history -run '^$' -bench DecodeConversation -benchtime 20x
func BenchmarkDecodeConversation(b *testing.B) {
	var raws [][]byte
	ahead := 0
	for i := 0; i < 100000; i += 2 {
		for _, m := range []Message{
			{Role: Assistant, Parts: []Part{{Type: TextPart, Text: "Let me read the next file."},
				{Type: ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}, Time: time.Now()},
			{Role: User, Parts: []Part{{Type: ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
				Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}, Time: time.Now()},
		} {
			raw, err := result.JSON(m)
			if err != nil {
				b.Fatal(err)
			}
			raws, ahead = append(raws, raw), ahead+len(raw)
		}
	}
	var each, decoder []time.Duration
	for b.Loop() {
		kept := make([]Message, len(raws))
		start := time.Now()
		for i, raw := range raws {
			m, err := DecodeMessage(raw)
			if err != nil {
				b.Fatal(err)
			}
			kept[i] = m
		}
		each = append(each, time.Since(start))
		kept = make([]Message, len(raws))
		start = time.Now()
		var d Decoder
		left := ahead
		for i, raw := range raws {
			m, err := d.Message(raw, left)
			if err != nil {
				b.Fatal(err)
			}
			left -= len(raw)
			kept[i] = m
		}
		decoder = append(decoder, time.Since(start))
	}
	b.ReportMetric(medianMs(each), "each-ms")
	b.ReportMetric(medianMs(decoder), "decoder-ms")
}

// medianMs is the median of ds in milliseconds.
func medianMs(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// decodeAll reads raws in order with d, telling it each time how many
// bytes are still to come, as a store reading them back does.
func decodeAll(t *testing.T, d *Decoder, raws [][]byte) []Message {
	t.Helper()
	ahead := 0
	for _, raw := range raws {
		ahead += len(raw)
	}
	got := make([]Message, len(raws))
	for i, raw := range raws {
		m, err := d.Message(raw, ahead)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		ahead -= len(raw)
		got[i] = m
	}
	return got
}
