package mcp

import (
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
