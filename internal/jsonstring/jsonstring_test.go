package jsonstring_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/result"
)

func TestAppendIsJSONAndWithHTMLIsEncodingJSONsOwnBytes(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"uote\\ back", "ctl \x00\x01\x1f\t\n\r", "é 😀 \u2028 \u2029", "<&>", "bad \xff byte"} {
		for _, html := range []bool{false, true} {
			raw := jsonstring.Append(nil, s, html)
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

func TestTextDecodesValidStringsAsEncodingJSONDoes(t *testing.T) {
	for _, raw := range []string{
		`""`, `"plain"`, `"é 😀"`, `"line \"one\"\n\ttwo \u003c\u0026\u003e \/ \b\f\r\\"`,
		`"pair \ud83d\ude00 end"`, `"lone \ud800 and \udc00x"`, `"high then not low \ud83d\u0041"`, `"high at end \ud83d"`,
		`"\u00e9\u00E9"`, "\"bad \xff\xfe utf-8\"",
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var got jsonstring.Text
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if result.WellFormed(string(got)) != want {
			t.Errorf("%s: %q, encoding/json's %q", raw, got, want)
		}
	}
	var keep jsonstring.Text = "kept"
	if err := json.Unmarshal([]byte(`null`), &keep); err != nil || keep != "kept" {
		t.Errorf("null: %q, %v", keep, err)
	}
}
