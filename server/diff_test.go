package server

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

func TestADiffSaysWhereTheCachedPrefixEndsAndWhy(t *testing.T) {
	const tools = `"tools":[{"name":"t","description":"reads","input_schema":{}}]`
	body := func(msgs, rest string) []byte {
		return []byte(`{"messages":[` + msgs + `],` + rest + `}`)
	}
	m1 := `{"role":"user","content":[{"type":"text","text":"hi"}]}`
	m2 := `{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"t","input":{}}]}`
	m3 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"big result"}]}`
	m3cleared := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"[cleared]"}]}`
	m1marked := `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`
	base := `"max_tokens":100,"model":"m",` + tools + `,"system":"s"`
	for _, tc := range []struct {
		name       string
		a, b       []byte
		kind, path string
		markers    bool
		why        string
	}{
		{"the same", body(m1, base), body(m1, base), "same", "", false, "same prompt"},
		{"extends", body(m1, base), body(m1+","+m2+","+m3, base), "extends", "messages[1]", false, "holds the whole prompt of request 1"},
		{"extends, a marker moved", body(m1marked, base), body(m1+","+m2, base), "extends", "messages[1]", true, "holds the whole prompt"},
		{"a result cleared", body(m1+","+m2+","+m3, base), body(m1+","+m2+","+m3cleared, base), "changed", "messages[2].content[0].content", false, "context edit"},
		{"a summary took the older part's place", body(m1+","+m2+","+m3, base), body(m1, base), "shorter", "messages[1]", false, "summary"},
		{"the tools changed", body(m1, base), body(m1, strings.Replace(base, "reads", "reads files", 1)), "changed", "tools[0].description", false, "tool definitions differ"},
		{"the system prompt changed", body(m1, base), body(m1, strings.Replace(base, `"s"`, `"s2"`, 1)), "changed", "system", false, "the system differs"},
		{"only a setting changed", body(m1, base), body(m1, strings.Replace(base, "100", "200", 1)), "changed", "max_tokens", false, "a setting differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diffRequests(history.SentRequest{N: 1, Wire: "anthropic", Body: tc.a}, history.SentRequest{N: 2, Wire: "anthropic", Body: tc.b})
			if d.Kind != tc.kind || d.Path != tc.path || d.MarkersMoved != tc.markers || !strings.Contains(d.Why, tc.why) {
				t.Fatalf("got %s at %q (markers %v): %s", d.Kind, d.Path, d.MarkersMoved, d.Why)
			}
			if d.CommonBytes != history.CommonPrefix(tc.a, tc.b) || d.Bytes != len(tc.b) {
				t.Fatalf("bytes: %+v", d)
			}
		})
	}
}
