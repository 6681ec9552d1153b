package provider

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendJSONStringIsJSONAndWithHTMLIsEncodingJSONsOwnBytes(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"uote\\ back", "ctl \x00\x01\x1f\t\n\r", "é 😀 \u2028 \u2029", "<&>", "bad \xff byte"} {
		for _, html := range []bool{false, true} {
			raw := AppendJSONString(nil, s, html)
			var back string
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("%q encodes as %s: %v", s, raw, err)
			}
			if want := strings.ToValidUTF8(s, "\uFFFD"); back != want {
				t.Fatalf("%q comes back as %q", s, back)
			}
			if want, _ := json.Marshal(s); html && utf8.ValidString(s) && string(raw) != string(want) {
				t.Errorf("with html, %q encodes as %s; encoding/json writes %s", s, raw, want)
			}
			if !html && strings.Contains(s, "<") && !strings.Contains(string(raw), "<") {
				t.Errorf("without html, %q encodes as %s: < was escaped", s, raw)
			}
		}
	}
}
