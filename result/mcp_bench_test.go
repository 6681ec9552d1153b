package result

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkFromMCP reads an MCP tool result of text blocks as a server
// sends them: lines with escapes (newlines, tabs, quotes) and one with a
// \u escape of a pair, the way jsonString decodes each field. Run:
//
//	go test ./result -run '^$' -bench FromMCP -count 6
func BenchmarkFromMCP(b *testing.B) {
	line := "     1\tpackage main — \"quoted\" \\ back\n"
	var content []map[string]string
	for i := range 20 {
		text := strings.Repeat(line, 40)
		if i%5 == 0 {
			text += "\U0001F600 plain text without an escape"
		}
		content = append(content, map[string]string{"type": "text", "text": text})
	}
	raw, err := json.Marshal(map[string]any{"content": content})
	if err != nil {
		b.Fatal(err)
	}
	raw = []byte(strings.ReplaceAll(string(raw), "\U0001F600", `\ud83d\ude00`))
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := FromMCP(raw); err != nil {
			b.Fatal(err)
		}
	}
}
