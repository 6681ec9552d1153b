package result

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
)

// checkOutput is what holds for every output, whatever the input: well
// formed text within its cap, valid structured JSON.
func checkOutput(t *testing.T, out Output, cap int) {
	t.Helper()
	if !utf8.ValidString(out.Text) {
		t.Fatalf("text is not valid UTF-8: %q", out.Text)
	}
	if n := utf8.RuneCountInString(out.Text); n > cap {
		t.Fatalf("text is %d characters, over the cap %d", n, cap)
	}
	if out.Structured != nil && !json.Valid(out.Structured) {
		t.Fatalf("structured content is not valid JSON: %s", out.Structured)
	}
}

// FuzzConvert feeds arbitrary bytes to the conversion as a string, as text
// blocks and as a decoded JSON value. Seeds: testdata/fuzz/FuzzConvert.
func FuzzConvert(f *testing.F) {
	f.Add([]byte("plain\ntext"), uint8(0))
	f.Add([]byte("a\xed\xa0\xbd\xed\xb8\x80b\xff"), uint8(1))
	f.Add([]byte(`{"b":[1,"<&>"],"a":null}`), uint8(2))
	f.Add([]byte(strings.Repeat("line\r\n", 400)), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var r Result
		switch mode % 3 {
		case 0:
			r.Data = string(data)
		case 1:
			var blocks []Block
			for _, part := range strings.SplitAfter(string(data), "\x01") {
				blocks = append(blocks, TextBlock{Text: part})
			}
			r.Data = blocks
		case 2:
			var v any
			if json.Unmarshal(data, &v) != nil {
				return
			}
			r.Data, r.Structured = v, v
		}
		out := One(Call{ID: "fuzz", Result: r, Cap: 1000}, Env{Store: &memStore{}})
		checkOutput(t, out, 1000)
		if s, ok := r.Data.(string); ok && mode%3 == 0 && isPlainText(s) && utf8.RuneCountInString(s) <= 1000 && out.Text != s {
			t.Fatalf("plain text %q came out as %q", s, out.Text)
		}
	})
}

// FuzzFromMCP reads arbitrary bytes as an MCP tool result. Seeds:
// testdata/fuzz/FuzzFromMCP.
func FuzzFromMCP(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}]}`))
	f.Add([]byte(`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"zzz"}],"isError":true}`))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"x","blob":"AAA="}}],"structuredContent":{"a":1}}`))
	f.Add([]byte("{\"content\":[{\"type\":\"text\",\"text\":\"\\ud800\xed\xa0\x80\"}]}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := FromMCP(raw)
		if err != nil {
			return
		}
		out := One(Call{ID: "fuzz", Result: r, Cap: 1000}, Env{Store: &memStore{}})
		checkOutput(t, out, 1000)
	})
}

// FuzzJSONRaw: raw JSON comes out valid, well formed, without a lone
// surrogate escape, and meaning the same as it went in wherever it was
// well formed already.
func FuzzJSONRaw(f *testing.F) {
	f.Add([]byte(`{"a":"x\ud800y","b":["\ud83d\ude00",1,null]}`))
	f.Add([]byte("{\"a\":\"\xed\xa0\xbd\xed\xb8\x80 \xff\"}"))
	f.Add([]byte(`"\\ud800 is text, not an escape"`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out, err := JSON(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("valid JSON %q: %v", raw, err)
		}
		if !json.Valid(out) || !utf8.Valid(out) || hasLoneSurrogateEscape(out) {
			t.Fatalf("JSON(%q) = %q: not valid, not well formed, or a lone surrogate escape", raw, out)
		}
		if utf8.Valid(raw) && !hasSurrogateEscape(raw) {
			var a, b any
			json.Unmarshal(raw, &a)
			json.Unmarshal(out, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("JSON(%q) = %q changed its meaning", raw, out)
			}
		}
	})
}

// hasLoneSurrogateEscape reports a `\uXXXX` surrogate escape that is not
// half of a pair, skipping escaped backslashes.
func hasLoneSurrogateEscape(b []byte) bool {
	s := string(b)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] != 'u' {
			i++
			continue
		}
		r, n, _ := jsonstring.UnicodeEscape(s[i+2:])
		if n == 4 && isSurrogateHex(s[i+2:i+6]) && r == utf8.RuneError {
			return true
		}
		i += 1 + n
	}
	return false
}
