package mcp

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestOnlyAFinalResultIsTakenFromTheSDK(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		taken bool
	}{
		{`{"content":[{"type":"text","text":"resultType"}]}`, true},
		{`{"content":[],"resultType":"complete"}`, true},
		{`{"resultType":"input_required","inputRequests":{"r1":{"method":"roots/list"}}}`, false},
	} {
		s := &slot{}
		resp := &jsonrpc.Response{Result: json.RawMessage(tc.raw)}
		take(s, resp)
		if taken := s.get() != nil; taken != tc.taken {
			t.Errorf("%s: taken %v, want %v", tc.raw, taken, tc.taken)
		}
		if tc.taken && string(resp.Result) != string(emptyResult) || !tc.taken && string(resp.Result) != tc.raw {
			t.Errorf("%s: the SDK gets %s", tc.raw, resp.Result)
		}
	}
}
