package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestIDScanFindsTheTopLevelIDWhereverItIs(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want any // nil: no id found
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, float64(7)},
		{`{"result":{"id":99,"content":[{"text":"\"id\":5"}]},"jsonrpc":"2.0","id":12}`, float64(12)},
		{`{ "id" : "abc-1" , "result" : {} }`, "abc-1"},
		{`{"id":"with \"quote\"","result":1}`, `with "quote"`},
		{`{"result":{"id":3}}`, nil},
		{`[{"id":1}]`, nil},
	} {
		var s idScan
		for i := range len(tc.msg) { // byte by byte: pieces split anywhere
			s.feed([]byte{tc.msg[i]})
		}
		id, err := s.ID()
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: found id %v, want none", tc.msg, id.Raw())
			}
			continue
		}
		want, _ := jsonrpc.MakeID(tc.want)
		if err != nil || id != want {
			t.Errorf("%s: id %v (%v), want %v", tc.msg, id.Raw(), err, tc.want)
		}
	}
}

// FuzzIDScan: on any JSON object whose top level has one plain "id" key,
// the scanner finds the id encoding/json finds, whatever comes before or
// after it, and fed in any pieces.
func FuzzIDScan(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"id":1}}`), uint8(3))
	f.Add([]byte(`{"result":{"content":[{"text":"\"id\":5}"}]},"id":"x"}`), uint8(1))
	f.Add([]byte(`{"a":[{"id":2}],"id":-3.5e2}`), uint8(0))
	f.Fuzz(func(t *testing.T, msg []byte, piece uint8) {
		var top map[string]json.RawMessage
		if json.Unmarshal(msg, &top) != nil || bytes.Count(msg, []byte(`"id"`)) != 1 {
			return
		}
		raw, ok := top["id"]
		if !ok {
			return // the one "id" is nested
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		want, err := jsonrpc.MakeID(v)
		if err != nil {
			return // not an id JSON-RPC allows
		}
		var s idScan
		step := int(piece%16) + 1
		for i := 0; i < len(msg); i += step {
			s.feed(msg[i:min(i+step, len(msg))])
		}
		got, err := s.ID()
		if len(raw) > maxScanned {
			return // longer than any id myelin sends
		}
		if err != nil || got != want {
			t.Fatalf("%s: scanned %v (%v), want %v", msg, got.Raw(), err, want.Raw())
		}
	})
}
