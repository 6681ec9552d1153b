package responses

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// wouldPassOver is what read did with an event before passOver: decode
// it whole, and pass it over when it was of a type the wire does not
// read and had no error object (or, not decoding, was of such a type).
func wouldPassOver(data []byte) bool {
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		var t struct {
			Type string `json:"type"`
		}
		return json.Unmarshal(data, &t) == nil && !reads(t.Type)
	}
	e := bytes.TrimSpace(ev.Error)
	return (len(e) == 0 || string(e) == "null") && !reads(ev.Type)
}

var passOverCases = []struct {
	data string
	pass bool
}{
	{`{"type":"response.created","sequence_number":0,"response":{"id":"r","output":[]}}`, true},
	{`{"type":"response.function_call_arguments.done","arguments":"{}","output_index":3}`, true},
	{`{"output_index":3,"type":"response.content_part.added","error":null}`, true},
	{`{"type":"response.output_item.added","item":{"type":"function_call"}}`, false}, // read
	{`{"type":"response.created","error":{"message":"boom"}}`, false},                // an error ends the stream
	{`{"type":"response.created","error":null,"error":""}`, false},                   // the last one counts
	{`{"Type":"response.output_text.delta","type":"response.created"}`, false},       // encoding/json matches without case
	{`{"type":"response.created","ERROR":{}}`, false},
	{`{"type":"response.\u0063reated"}`, false}, // escaped: not decided here
	{`{"type":"response.created"`, false},       // malformed
	{`{"type":"response.created"} x`, false},
	{`{"sequence_number":1}`, false}, // no type
	{`[]`, false},
}

// passOver passes over only events read would have passed over, and
// passes over the ones it was made for.
func TestPassOverIsWhatReadWouldDo(t *testing.T) {
	for _, c := range passOverCases {
		got := passOver([]byte(c.data))
		if got != c.pass {
			t.Errorf("%s: passOver %v, want %v", c.data, got, c.pass)
		}
		if got && !wouldPassOver([]byte(c.data)) {
			t.Errorf("%s: passed over, but read would have read it", c.data)
		}
	}
	passed := 0
	for _, line := range strings.Split(lightAnswer(), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && passOver([]byte(data)) {
			passed++
		}
	}
	if passed != 12 {
		t.Errorf("a light round's answer: %d events passed over, want 12 (created, in_progress, 10 arguments.done)", passed)
	}
}

func FuzzPassOverIsWhatReadWouldDo(f *testing.F) {
	for _, c := range passOverCases {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if passOver(data) && !wouldPassOver(data) {
			t.Fatalf("%q: passed over, but read would have read it", data)
		}
	})
}
