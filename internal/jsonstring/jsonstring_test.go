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

// Unquote takes what encoding/json takes for a string and nothing else,
// and decodes it as encoding/json does, but for the bytes that are not
// UTF-8, which it keeps where encoding/json makes each a U+FFFD.
func FuzzUnquoteIsEncodingJSONsStringKeepingBadBytes(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\ud83d\ude00"`, `"\ud800x"`, `"\udc00\ud800"`, `"\ud83d\u0041"`, `"\u00e9\/\b\f\n\r\t"`, "\"\xff\"", "\"\x01\"", `"\x"`, `"\u12"`, `"abc`, `"a"b"`, ` "a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := jsonstring.Unquote(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		// Unquote is given a value as encoding/json hands it over: the
		// string alone, nothing around it
		isString := err == nil && len(raw) > 1 && raw[0] == '"' && raw[len(raw)-1] == '"'
		if ok != isString {
			t.Fatalf("%q: Unquote ok %v; encoding/json decodes it as a string: %v (%v)", raw, ok, isString, err)
		}
		if ok && byteByByte(got) != want {
			t.Fatalf("%q: Unquote %q, each bad byte a U+FFFD %q; encoding/json %q", raw, got, byteByByte(got), want)
		}
	})
}

// byteByByte is s with each byte that is not UTF-8 a U+FFFD, as
// encoding/json makes it (result.WellFormed makes a sequence one).
func byteByByte(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// Read stops after the string's closing quote and says how far it read;
// what follows is not its business.
func TestReadTakesTheStringUpToItsClosingQuote(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		n        int
		ok       bool
	}{
		{`plain", "next"`, "plain", 6, true},
		{`a\"b\\c\/d"x`, `a"b\c/d`, 11, true},
		{`pair \ud83d\ude00 end",`, "pair \U0001F600 end", 22, true},
		{`lone \ud800\u0041"`, "lone \uFFFDA", 18, true},
		{`low first \udc00\ud800"`, "low first \uFFFD\uFFFD", 23, true},
		{"bad \xff byte\"", "bad \xff byte", 11, true},
		{`no end`, "", 6, false},
		{`escape at the end \`, "", 18, false},
		{"control \x01\"", "", 8, false},
		{`unknown \x"`, "", 8, false},
		{`short \u12"`, "", 6, false},
	} {
		got, n, ok := jsonstring.Read([]byte(tc.in))
		if got != tc.want || n != tc.n || ok != tc.ok {
			t.Errorf("Read(%q) = %q, %d, %v; want %q, %d, %v", tc.in, got, n, ok, tc.want, tc.n, tc.ok)
		}
	}
}

// UnicodeEscape reads the digits after \u, a pair as its character, a lone
// surrogate as U+FFFD taking only its own four digits.
func TestUnicodeEscapeReadsAPairWholeAndALoneSurrogateAlone(t *testing.T) {
	for _, tc := range []struct {
		in   string
		r    rune
		n    int
		fine bool
	}{
		{"00e9", 'é', 4, true},
		{"D83D\\uDE00", '\U0001F600', 10, true},
		{"d83d\\ude00rest", '\U0001F600', 10, true},
		{"D83D\\u0041", '\uFFFD', 4, true},
		{"DE00\\uD83D", '\uFFFD', 4, true},
		{"D83D", '\uFFFD', 4, true},
		{"D83D\\uDE0", '\uFFFD', 4, true},
		{"12G4", 0, 0, false},
		{"123", 0, 0, false},
	} {
		r, n, ok := jsonstring.UnicodeEscape(tc.in)
		if rb, nb, okb := jsonstring.UnicodeEscape([]byte(tc.in)); rb != r || nb != n || okb != ok {
			t.Errorf("%q: as bytes %U, %d, %v; as a string %U, %d, %v", tc.in, rb, nb, okb, r, n, ok)
		}
		if r != tc.r || n != tc.n || ok != tc.fine {
			t.Errorf("UnicodeEscape(%q) = %U, %d, %v; want %U, %d, %v", tc.in, r, n, ok, tc.r, tc.n, tc.fine)
		}
	}
}

// AppendRead reads what Read reads, to the same string and length, into
// the buffer it is given: after its bytes, never longer than the bytes it
// took (so a buffer with that much room is not grown), and with the
// buffer's length as it was when the string is not well formed.
func FuzzAppendReadIsRead(f *testing.F) {
	for _, s := range []string{`plain", "next"`, `a\"b\\c\/d"x`, `pair \ud83d\ude00 end",`, `lone \ud800\u0041"`, "bad \xff byte\"", `no end`, `escape at the end \`, "control \x01\"", `unknown \x"`, `\u12"`, `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantN, wantOK := jsonstring.Read(b)
		buf := append(make([]byte, 0, 3+len(b)), "abc"...)
		out, n, ok := jsonstring.AppendRead(buf, b)
		if ok != wantOK || n != wantN {
			t.Fatalf("%q: AppendRead took %d bytes, ok %v; Read %d, ok %v", b, n, ok, wantN, wantOK)
		}
		if !ok {
			if len(out) != 3 || string(out) != "abc" {
				t.Fatalf("%q: not a string, yet AppendRead left the buffer %q, not %q", b, out, "abc")
			}
			return
		}
		if string(out[:3]) != "abc" || string(out[3:]) != want {
			t.Fatalf("%q: AppendRead gave %q after the buffer's %q; Read %q", b, out[3:], out[:3], want)
		}
		if len(out)-3 > n || cap(out) != cap(buf) {
			t.Fatalf("%q: the string is %d bytes from %d taken, the buffer grown from %d to %d", b, len(out)-3, n, cap(buf), cap(out))
		}
	})
}
