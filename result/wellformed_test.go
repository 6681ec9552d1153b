package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWellFormed(t *testing.T) {
	const R = "\uFFFD"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"valid text unchanged", "héllo 😀 世界", "héllo 😀 世界"},
		{"lone continuation byte", "a\x80b", "a" + R + "b"},
		{"truncated three-byte sequence is one replacement", "a\xe2\x82b", "a" + R + "b"},
		{"truncated four-byte sequence at the end", "a\xf0\x9f\x98", "a" + R},
		{"overlong encoding is two replacements", "\xc0\x80", R + R},
		{"byte that starts nothing", "\xff\xfe", R + R},
		{"code point above U+10FFFF", "\xf4\x90\x80\x80", R + R + R + R},
		{"CESU-8 surrogate pair is the character", "x\xed\xa0\xbd\xed\xb8\x80y", "x😀y"},
		{"lone high surrogate is one replacement", "x\xed\xa0\xbdy", "x" + R + "y"},
		{"lone low surrogate is one replacement", "x\xed\xb8\x80y", "x" + R + "y"},
		{"high surrogate then a character", "\xed\xa0\xbd\xc3\xa9", R + "é"},
		{"two high surrogates", "\xed\xa0\xbd\xed\xa0\xbd", R + R},
		{"low then high", "\xed\xb8\x80\xed\xa0\xbd", R + R},
		{"truncated surrogate", "\xed\xa0", R + R},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WellFormed(tc.in)
			if got != tc.want {
				t.Fatalf("WellFormed(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Fatal("result is not valid UTF-8")
			}
		})
	}
}

func TestIsPlainTextAgreesWithValidAndNoNUL(t *testing.T) {
	long := strings.Repeat("abcdefgh", 1000)
	for _, s := range []string{
		"", "a", "abcdefg", "abcdefgh", "abcdefghi", long, long + "é", "é" + long, long + "\x00", "\x00" + long,
		long[:4001] + "\x00" + long, strings.Repeat("世界", 3000) + "\x00", strings.Repeat("世界", 3000) + "\xff",
		strings.Repeat("a", 4093) + "世界" + strings.Repeat("b", 5000), long + "\xed\xa0\x80",
	} {
		want := utf8.ValidString(s) && !strings.Contains(s, "\x00")
		if got := isPlainText(s); got != want {
			t.Errorf("isPlainText(%.20q… len %d) = %v, want %v", s, len(s), got, want)
		}
	}
}

func TestTextInsideContentBlocksIsMadeWellFormed(t *testing.T) {
	out := one(t, Result{Data: []Block{
		TextBlock{Text: "a\xed\xa0\xbd\xed\xb8\x80 and \xe2\x82 and \xed\xa0\xbd"},
		TextBlock{Text: "ok"},
	}}, nil)
	if want := "a😀 and \uFFFD and \uFFFD\nok"; out.Text != want {
		t.Fatalf("text = %q, want %q", out.Text, want)
	}
}

func TestLooksBinary(t *testing.T) {
	for s, want := range map[string]bool{
		"plain text":                      false,
		"":                                false,
		"nul\x00inside":                   true,
		"caf\xe9 with one bad byte":       false,
		strings.Repeat("\xff\x80\xfe", 9): true,
	} {
		if got := LooksBinary(s); got != want {
			t.Errorf("LooksBinary(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestIsPlainTextFindsANULOrABadByteAtAnyPosition(t *testing.T) {
	base := strings.Repeat("a", 300)
	for p := 0; p < len(base); p++ {
		for ins, want := range map[string]bool{"\x00": false, "\xff": false, "é": true, "\xed\xa0\x80": false} {
			s := base[:p] + ins + base[p:]
			if got := isPlainText(s); got != want {
				t.Fatalf("isPlainText with %q at %d = %v, want %v", ins, p, got, want)
			}
		}
	}
}

func TestCharsCountsCodePointsOfWellFormedText(t *testing.T) {
	for _, s := range []string{"", "a", "é", "😀", strings.Repeat("aé😀世", 100), strings.Repeat("x", 33) + "€", "\uFFFD\uFFFD"} {
		for cut := 0; cut < 5 && cut <= len(s); cut++ {
			p := strings.Repeat("z", cut) + s
			if got, want := Chars(p), utf8.RuneCountInString(p); got != want {
				t.Fatalf("Chars(%q) = %d, want %d", p, got, want)
			}
		}
	}
}

func TestStructuredJSONIsMadeWellFormed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"plain é \u00e9"}`, `{"a":"plain é \u00e9"}`},
		{"{\"a\":\"x\xffy\"}", "{\"a\":\"x\uFFFDy\"}"},
		{"{\"a\":\"\xed\xa0\xbd\xed\xb8\x80\"}", "{\"a\":\"😀\"}"},
		{`{"lone":"a\ud800b","low":"\uDC00","pair":"\ud83d\ude00","esc":"\\ud800"}`, `{"lone":"a\ufffdb","low":"\ufffd","pair":"\ud83d\ude00","esc":"\\ud800"}`},
	} {
		got, err := JSON(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("JSON(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestBinaryCountsEachIllFormedSequenceOnceAndSurrogatesAsText(t *testing.T) {
	const R = "\uFFFD"
	for _, tc := range []struct {
		name   string
		in     string
		binary bool
		text   string // the text when it is not binary
	}{
		{"a lone surrogate in a short string is text", "x\xed\xa0\x80y", false, "x" + R + "y"},
		{"a lone surrogate alone is text", "\xed\xb8\x80", false, R},
		{"lone surrogates only are text", strings.Repeat("\xed\xa0\x80", 40), false, strings.Repeat(R, 40)},
		{"surrogate pairs are text", strings.Repeat("\xed\xa0\xbd\xed\xb8\x80", 40), false, strings.Repeat("😀", 40)},
		{"a truncated 4-byte sequence counts once", strings.Repeat("abcde\xf0\x9f\x98", 20), false, strings.Repeat("abcde"+R, 20)},
		{"one bad byte in 3 characters is over 30%", "x\xffy", true, ""},
		{"one bad byte in 4 characters is under 30%", "ab\xffc", false, "ab" + R + "c"},
		{"mostly bad bytes", strings.Repeat("\xff\xfe\x81", 50) + "ok", true, ""},
		{"a NUL", "text\x00", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksBinary(tc.in); got != tc.binary {
				t.Fatalf("LooksBinary(%q) = %v, want %v", tc.in, got, tc.binary)
			}
			out := one(t, Result{Data: tc.in}, &memStore{})
			mcp := one(t, mustMCP(t, tc.in), &memStore{})
			for _, o := range []Output{out, mcp} {
				if stub := strings.HasPrefix(o.Text, "[binary: "); stub != tc.binary {
					t.Fatalf("text = %q, want binary %v", o.Text, tc.binary)
				}
				if !tc.binary && o.Text != tc.text {
					t.Fatalf("text = %q, want %q", o.Text, tc.text)
				}
			}
		})
	}
}

// mustMCP is an MCP result whose one text block holds s byte for byte.
func mustMCP(t *testing.T, s string) Result {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"content":[{"type":"text","text":"`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(`"}]}`)
	r, err := FromMCP([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPlainTextCountsTheCharactersOfPlainText(t *testing.T) {
	long := strings.Repeat("abcdefgh", 1000)
	for _, s := range []string{"", "a", "é", long, long + "é", "é" + long, strings.Repeat("世界😀", 3000),
		strings.Repeat("a", 4093) + "世界" + strings.Repeat("b", 5000), long + "\x00", long + "\xff"} {
		plain, chars := plainText(s, true)
		if plain != isPlainText(s) || plain && chars != utf8.RuneCountInString(s) {
			t.Errorf("plainText(%.20q… len %d) = %v, %d; want %v, %d", s, len(s), plain, chars, isPlainText(s), utf8.RuneCountInString(s))
		}
	}
}
