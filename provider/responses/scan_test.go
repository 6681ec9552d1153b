package responses

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

// eventCases are events and near-events that decodeEvent must read as
// json.Unmarshal does: the fake's streams (a light round of ten calls,
// text, reasoning with and without a summary, usage), then what the API
// may send that they do not (escapes, nulls, members the reader skips,
// errors, incomplete and failed responses), then what it should not
// (malformed JSON, wrong types, keys in another case or given twice).
func eventCases(t testing.TB) []string {
	var cases []string
	light := providertest.Step{Input: 100, Output: 20, CacheRead: 50, CacheWrite: 7}
	for i := range 3 {
		light.ToolCalls = append(light.ToolCalls, providertest.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "noop--run", Input: `{}`})
	}
	for _, tc := range []struct {
		step    providertest.Step
		summary bool
	}{
		{light, false},
		{providertest.Step{Text: "hello there", Input: 12, CacheRead: 3, Output: 9}, false},
		{providertest.Step{Reasoning: "think <first>", Text: "é 😀 <&>"}, true},
		{providertest.Step{Reasoning: "quietly", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a <b> \"c\""}`}}}, false},
	} {
		r := sse.NewReader(strings.NewReader(providertest.ResponsesStream(tc.step, tc.summary)))
		for r.Next() {
			cases = append(cases, string(r.Event().Data))
		}
	}
	if len(cases) < 40 {
		t.Fatalf("only %d events from the fake's streams", len(cases))
	}
	return append(cases,
		// what the API sends beyond the fake
		`{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":2,"delta":"step","sequence_number":4}`,
		`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"more","obfuscation":"x"}`,
		`{"type":"response.refusal.delta","output_index":1,"content_index":0,"delta":"I can't"}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"b"}],"content":[{"type":"reasoning_text","text":"raw"}],"encrypted_content":"gAAAA+/=="}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[],"content":[],"encrypted_content":null}}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]},{"type":"refusal","refusal":"no"}]}}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":\"b\\n\"}"}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","arguments":null,"call_id":null,"name":null}}`,
		`{"type":"response.output_item.done","item":{"arguments":{"not":"a string"}}}`, `{"type":"x","item":{"arguments":[1, 2.5e-3, true, false, null]}}`,
		`{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"q\":\"\\u00e9\"}"}`,
		`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":5,"output_tokens":7,"input_tokens_details":{"cached_tokens":0}}}}`,
		`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"error":null}}`,
		`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[],"usage":null}}`,
		`{"type":"response.failed","response":null}`, `{"type":"response.completed","response":{"status":"cancelled"}}`,
		`{"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window.","param":"input"}}`,
		`{"type":"error","code":"rate_limit_exceeded","message":"Slow down \"please\"","param":null,"sequence_number":1}`,
		`{"type":"error","code":null,"message":null,"error":null}`, `{"error":"oops"}`, `{"error":1.5e3}`, `{"error":[]}`, `{"error":{"a":tru}}`,
		`{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3,"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":5},"output_tokens_details":{"reasoning_tokens":6}}}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":null,"output_tokens":null,"input_tokens_details":null},"incomplete_details":null,"output":null,"status":null,"error":null}}`,
		`{"type":"response.completed","response":{"output":[{"type":"message","content":null,"summary":null}]}}`,
		" \t\r\n{ \"type\" : \"response.output_text.delta\" , \"output_index\" : 0 , \"delta\" : \"a\" } \n",
		`{"type":"response.output_text.delta","delta":"line \"one\"\n\ttwo \u003c\u0026\u003e \ud83d\ude00 \/ \b\f\r"}`,
		"{\"type\":\"response.output_text.delta\",\"delta\":\"bad \xff\xfe utf-8\"}", // bytes that are not UTF-8
		`{"type":"response.output_text.delta","delta":"bad \xff"}`,                   // an escape JSON has not
		`{"type":"response.output_text.delta","delta":"a lone surrogate \ud800 and \udc00x"}`,
		`{"type":"response.output_text.delta","delta":"a`+cesu+`b"}`,
		"{\"type\":\"response.output_item.done\",\"item\":{\"call_id\":\"bad \xff\",\"name\":\"\\u00e9\",\"content\":[{\"text\":\"\xff\"}],\"summary\":[{\"text\":\"\xfe\"}],\"encrypted_content\":\"\xc3\"}}",
		"{\"type\":\"response.\xff\",\"\xfe\":1}",
		`{"type":"response.output_text.delta","delta":null,"output_index":null,"summary_index":null,"content_index":null,"item":null,"response":null}`,
		`{"type":"response.some_new_thing","delta":{"an":"object"},"item":[1]}`,
		`{}`, `null`, `[]`, `"x"`, `1`, ``, ` `,
		// keys in another case, given twice, escaped
		`{"Type":"x"}`, `{"OUTPUT_INDEX":1}`, `{"item":{"Call_ID":"c"}}`, `{"response":{"Usage":{}}}`, `{"ſtatus":1}`, `{"response":{"ſtatus":"completed"}}`,
		`{"response":{"usage":{"input_tokens_details":{"Cached_tokens":1}}}}`, `{"item":{"content":[{"TEXT":"x"}]}}`, `{"Error":{}}`, `{"errOr":null}`,
		`{"type":"a","type":"b"}`, `{"item":{"type":"a"},"item":{"name":"b"}}`, `{"item":{"type":"a"},"item":null}`, `{"error":{},"error":null}`,
		`{"response":{"usage":{"input_tokens":1},"usage":{"output_tokens":2}}}`, `{"response":{"output":[],"output":null}}`,
		`{"item":{"encrypted_content":"a","encrypted_content":null}}`, `{"item":{"arguments":"a","arguments":null}}`,
		"{\"response\":{\"usage\":{\"input_to\u212aens\":5,\"output_tokens\":1}}}", // the Kelvin sign folds to k
		"{\"response\":{\"usage\":{\"input_tokens_details\":{\"cache_write_to\u212aens\":2}}}}",
		`{"typ\u0065":"x","k\u0065y":1}`, `{"item":{"n\u0061me":"x"}}`,
		// numbers
		`{"output_index":-0}`, `{"output_index":-7}`, `{"output_index":123456789012345678}`, `{"output_index":1234567890123456789}`,
		`{"output_index":99999999999999999999}`, `{"output_index":1.5}`, `{"output_index":1e2}`, `{"output_index":01}`, `{"output_index":"1"}`,
		`{"response":{"usage":{"input_tokens":-}}}`, `{"response":{"usage":{"input_tokens":true}}}`, `{"type":1}`, `{"item":[]}`, `{"item":"x"}`,
		`{"response":{"output":[null]}}`, `{"item":{"content":[null]}}`, `{"item":{"summary":[1]}}`, `{"response":{"output":{}}}`,
		// malformed
		`{not json`, `{"type":"x"`, `{"type":"x"}x`, `{"type":"x",}`, `{"a":nul}`, `{"response":{"output":[{},]}}`, `{"item":{}}}`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":[1,]}`, `{"a":{"b"}}`,
		`{"delta":"x\u0000y"}`, "{\"delta\":\"tab\there\"}",
	)
}

// checkEventLikeEncodingJSON fails t when decodeEvent reads data
// otherwise than json.Unmarshal.
func checkEventLikeEncodingJSON(t *testing.T, data string) {
	t.Helper()
	providertest.DecodesAsEncodingJSON(t, data, decodeEvent)
}

func TestDecodeEventReadsAnEventAsEncodingJSONDoes(t *testing.T) {
	for _, c := range eventCases(t) {
		checkEventLikeEncodingJSON(t, c)
	}
}

func TestDecodeEventResetsTheEventFirst(t *testing.T) {
	ev := event{Type: "stale", OutputIndex: 3, Item: &outItem{Name: "x"}, Response: &response{}, Error: json.RawMessage(`{}`)}
	if err := decodeEvent([]byte(`{"type":"x"}`), &ev); err != nil || !reflect.DeepEqual(ev, event{Type: "x"}) {
		t.Fatalf("err %v, event %+v", err, ev)
	}
}

// A light round's events are all read by the scan itself: none goes to
// json.Unmarshal (which would be the cost the scan is there to cut).
func TestALightRoundsEventsAreScannedWhole(t *testing.T) {
	r := sse.NewReader(strings.NewReader(lightAnswer()))
	n := 0
	for r.Next() {
		var ev event
		s := eventScanner{}
		s.B = r.Event().Data
		if !s.event(&ev) || !s.AtEnd() {
			t.Errorf("not scanned: %s", r.Event().Data)
		}
		n++
	}
	if n != 43 {
		t.Fatalf("%d events, want 43", n)
	}
}

// FuzzDecodeEventIsEncodingJSONs holds the scan to encoding/json on any
// input: the same error or none, the same event.
func FuzzDecodeEventIsEncodingJSONs(f *testing.F) {
	for _, c := range eventCases(f) {
		f.Add(c)
	}
	f.Fuzz(checkEventLikeEncodingJSON)
}

var argumentsCases = []string{
	`"{}"`, `"{\"path\":\"a.txt\"}"`, `""`, `"é 😀"`, "\"\xff\"", `"\ud800"`, `"a\u0000"`, " \"{}\" ", `"{}" `, `"{}"x`,
	`null`, ``, ` `, `{}`, `{"a":1}`, `1`, `true`, `[]`, `"`, `"\q"`, "\"a\tb\"", `"{}""`,
}

// checkArgumentsLikeEncodingJSON fails t when argumentsOf reads raw
// otherwise than json.Unmarshal into a string.
func checkArgumentsLikeEncodingJSON(t *testing.T, raw string) {
	t.Helper()
	var want string
	wantOK := json.Unmarshal([]byte(raw), &want) == nil
	got, ok := argumentsOf(json.RawMessage(raw))
	if ok != wantOK || (ok && got != want) {
		t.Fatalf("%q: %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
	}
}

func TestArgumentsOfReadsThemAsEncodingJSONDoes(t *testing.T) {
	for _, c := range argumentsCases {
		checkArgumentsLikeEncodingJSON(t, c)
	}
}

// FuzzArgumentsOfIsEncodingJSONs holds argumentsOf to json.Unmarshal on
// any input.
func FuzzArgumentsOfIsEncodingJSONs(f *testing.F) {
	for _, c := range argumentsCases {
		f.Add(c)
	}
	f.Fuzz(checkArgumentsLikeEncodingJSON)
}

// An answer with no output item has no parts, as before its parts were
// allocated for its items ahead.
func TestAnAnswerOfNothingHasNilParts(t *testing.T) {
	var a accumulator
	stream := "data: " + `{"type":"response.completed","response":{"status":"completed","output":[]}}` + "\n\n"
	if err := a.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if p := a.response().Message.Parts; p != nil {
		t.Fatalf("parts %#v, want nil", p)
	}
}
