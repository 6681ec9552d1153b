package anthropic

import (
	"bytes"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

// scanCases are events and near-events that decodeEvent must read as
// json.Unmarshal does: the fake's streams, then what the API may send
// that they do not (escapes, nulls, members the reader skips), then
// what it should not (malformed JSON, wrong types, keys in another case).
func scanCases(t testing.TB) []string {
	var cases []string
	for _, step := range []providertest.Step{
		{Text: "hello there", Input: 12, CacheRead: 3, CacheWrite: 4, Output: 9},
		{Text: "for an hour", Input: 12, CacheRead: 3, CacheWrite: 9, CacheWrite1h: 5, Output: 9},
		{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a <b> \"c\""}`}}},
		{Thinking: []providertest.Thinking{{Text: "hmm, é 😀", Signature: "c2ln"}, {Redacted: "ZGF0YQ=="}}, Text: "ok"},
	} {
		r := sse.NewReader(strings.NewReader(providertest.AnthropicStream(step)))
		for r.Next() {
			cases = append(cases, string(r.Event().Data))
		}
	}
	return append(cases,
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard","server_tool_use":{"web_search_requests":0}}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":2,"other":{}}}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":null,"cache_creation_input_tokens":3}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":{"ephemeral_1h_input_tokens":null}}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":{"Ephemeral_1h_input_tokens":4}}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":{"ephemeral_1h_input_tokens":1.5}}}}`,
		`{"type":"message_start","message":{"usage":{"cache_creation":[1]}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"line \"one\"\n\ttwo \u003c\u0026\u003e \ud83d\ude00 \/ \b\f\r"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \xff\xfe utf-8"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a lone surrogate \ud800 and \udc00x"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":7,"output_tokens":15,"cache_read_input_tokens":null,"cache_creation_input_tokens":0}}`,
		`{"type":"message_delta","usage":{"input_tokens":7,"input_tokens":null}}`,
		`{"type":"message_delta","usage":{"input_tokens":7,"input_tokens":8}}`,
		`{"type":"message_delta","usage":{"input_tokens":7,"inpuT_tokens":null}}`,
		`{"type":"message_delta","usage":{"Output_Tokens":null,"other":null}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"q":[1,-2.5e+3,true,false,null,{"a":{}},[]]}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","start_char_index":0,"end_char_index":1e3}}}`,
		" \t\r\n{ \"type\" : \"message_stop\" , \"index\" : 0 } \n",
		`{"type":"ping"}`, `{}`, `null`, `[]`, `"x"`, `1`,
		`{"TYPE":"message_stop"}`, `{"Index":3}`, `{"delta":{"Text":"x"}}`, `{"ſtop":1}`,
		`{"type":"message_stop","index":-0}`, `{"index":-7}`, `{"index":123456789012345678}`, `{"index":1234567890123456789}`, `{"index":99999999999999999999}`,
		`{"index":1.5}`, `{"index":1e2}`, `{"index":01}`, `{"index":"1"}`, `{"index":-}`, `{"index":true}`,
		`{"type":1}`, `{"delta":"x"}`, `{"delta":[]}`, `{"message":null,"delta":null,"type":null,"usage":null}`,
		`{not json`, `{"type":"message_stop"`, `{"type":"message_stop"}x`, `{"type":"message_stop",}`, `{"a":tru}`, `{"a":nul}`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1.}`, `{"a":-}`, `{"a":.5}`, `{"a":1e}`, `{"a":[1,]}`, `{"a":{"b"}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"x\u0000y"}}`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"tab\there\"}}",
		`{"k\u0065y":1,"typ\u0065":"message_stop"}`,
	)
}

// checkLikeEncodingJSON fails t when decodeEvent reads data otherwise
// than json.Unmarshal.
func checkLikeEncodingJSON(t *testing.T, data string) {
	t.Helper()
	providertest.DecodesAsEncodingJSON(t, data, func(data []byte, ev *streamEvent) error {
		err := decodeEvent(data, ev)
		asDecoded(t, data, ev)
		return err
	})
}

// asDecoded moves the strings the scan kept as bytes (streamEvent's id,
// name and partialJSON) to the fields encoding/json decodes them to,
// failing t when both hold one.
func asDecoded(t *testing.T, data []byte, ev *streamEvent) {
	t.Helper()
	for _, f := range []struct {
		s *string
		b *[]byte
	}{
		{&ev.ContentBlock.ID, &ev.ContentBlock.id},
		{&ev.ContentBlock.Name, &ev.ContentBlock.name},
		{&ev.Delta.PartialJSON, &ev.Delta.partialJSON},
	} {
		if *f.b == nil {
			continue
		}
		if *f.s != "" {
			t.Fatalf("%q: the scan kept both %q and the bytes %q", data, *f.s, *f.b)
		}
		*f.s, *f.b = string(*f.b), nil
	}
}

func TestAStringThatNeedsNoDecodingIsKeptAsItsBytesInTheEvent(t *testing.T) {
	data := []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"noop--run","input":{}}}`)
	var ev streamEvent
	if err := decodeEvent(data, &ev); err != nil {
		t.Fatal(err)
	}
	cb := ev.ContentBlock
	if string(cb.id) != "toolu_1" || string(cb.name) != "noop--run" || cb.ID != "" || cb.Name != "" {
		t.Fatalf("id %q %q, name %q %q: want the bytes, and empty strings", cb.id, cb.ID, cb.name, cb.Name)
	}
	if &cb.id[0] != &data[bytes.Index(data, []byte("toolu_1"))] {
		t.Fatal("the id was copied, not kept as the event's bytes")
	}
	data = []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`)
	if err := decodeEvent(data, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Delta.partialJSON != nil || ev.Delta.PartialJSON != `{"a":1}` {
		t.Fatalf("an escaped partial_json: bytes %q, string %q; want it decoded into the string", ev.Delta.partialJSON, ev.Delta.PartialJSON)
	}
}

func TestOfAStringGivenTwiceTheLastCountsWhicheverWayEachWasRead(t *testing.T) {
	for data, want := range map[string]string{
		`{"delta":{"partial_json":"a","partial_json":"b\u0063"}}`: "bc",
		`{"delta":{"partial_json":"b\u0063","partial_json":"a"}}`: "a",
		`{"delta":{"partial_json":"a","partial_json":null}}`:      "a",
	} {
		var ev streamEvent
		if err := decodeEvent([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if got := string(appendRead(nil, ev.Delta.partialJSON, ev.Delta.PartialJSON)); got != want {
			t.Errorf("%s: read %q, want %q", data, got, want)
		}
		checkLikeEncodingJSON(t, data)
	}
}

func TestDecodeEventReadsAnEventAsEncodingJSONDoes(t *testing.T) {
	for _, c := range scanCases(t) {
		checkLikeEncodingJSON(t, c)
	}
}

func TestDecodeEventResetsTheEventFirst(t *testing.T) {
	ev := streamEvent{Type: "stale", Index: 9}
	ev.Delta.Text = "stale"
	if err := decodeEvent([]byte(`{"type":"message_stop"}`), &ev); err != nil || ev.Type != "message_stop" || ev.Index != 0 || ev.Delta.Text != "" {
		t.Fatalf("err %v, event %+v", err, ev)
	}
}

// FuzzDecodeEventIsEncodingJSONs holds the scan to encoding/json on any
// input: the same error or none, the same event.
func FuzzDecodeEventIsEncodingJSONs(f *testing.F) {
	for _, c := range scanCases(f) {
		f.Add(c)
	}
	f.Fuzz(checkLikeEncodingJSON)
}
