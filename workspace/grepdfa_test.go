package workspace

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/result"
)

func mustParse(t testing.TB, pattern string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// checkDFA: the lineDFA answers as regexp.Match does on each line alone.
func checkDFA(t *testing.T, pattern string, lines []string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	d, err := newLineDFA(mustParse(t, pattern))
	if err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ { // the second pass runs on the states the first built
		for _, line := range lines {
			got, ok := d.match([]byte(line))
			if !ok {
				t.Fatalf("%q gave up on %q", pattern, line)
			}
			if want := re.MatchString(line); got != want {
				t.Fatalf("%q on %q: dfa %v, regexp %v", pattern, line, got, want)
			}
		}
	}
}

// The lineDFA agrees with regexp on what a line-by-line grep meets: anchors
// at the line's ends, word boundaries (ASCII, as RE2's), case folding
// (with the Kelvin sign and the long s), runes past ASCII (matched by
// class: runes the same instructions consume), invalid UTF-8
// (a byte that is no character matches as U+FFFD does), empty matches and
// empty lines, repetitions and alternations.
func TestLineDFAMatchesAsRegexpDoesLineByLine(t *testing.T) {
	lines := []string{
		"", "a", "ab", "abc", " abc ", "xabcx", "ERROR worker-3 request id=17 took 4ms",
		"INFO worker-3 request id=27 took 40ms", "info worker-3 request id=7 ", "2026-12-02T10:00:01 took 123ms",
		"1.2.3", "v10.20.30-rc", "kelvin", "\u212aelvin", "ſs", "KELVIN", "é", "naïve café", "日本語のテキスト",
		"一刀一", "刀", "\u4e00", // U+4E00 and U+5200 share the class cache's slot
		"\xff\xfe", "a\xffb", "\xed\xa0\x80", "foo_bar baz", "foo-bar", "_", "word", "\r", "x\ry",
	}
	for _, pattern := range []string{
		"a", "abc", "^abc$", "^$", "^", "$", "a*", "x*$", `\bfoo\b`, `\Bar\B`, `\bbar`, `\b`, `\B`,
		`(?i)error worker-3`, `(?i)kelvin`, `(?i)s+`, `(?i)é`, `[A-Z]+ worker-3 request id=[0-9]*7 `,
		`[0-9]{3}ms`, `\d+\.\d+\.\d+`, `^\d`, `\d$`, `.`, `^.$`, `^.{3}$`, `\x{FFFD}`, `[^a-z]`, `\pL+`,
		`\p{Han}`, `[[:^alpha:]]`, `(a|ab)(c|bcd)`, `(?s).`, `(?m)^b`, `(?m)c$`, `\Aa`, `c\z`, "\\r",
		`(a+)+$`, `a{2,}b?`, `(?U)a+?`, `x|^$`, `(?:)`, `(^|b)c`, `a(\b|$)`, `[^\x00-\x7f]`, `日本`, `一`, `^刀`, `一$`, `[一-刀]{2}`,
	} {
		checkDFA(t, pattern, lines)
	}
}

// When the states outgrow their budget they are dropped and built again,
// with the same answers; past dfaMaxFlushes the lineDFA gives up, and grep
// goes on with regexp and counts the same lines.
func TestLineDFAGivesUpPastItsBudgetAndGrepFallsBackOnRegexp(t *testing.T) {
	budget, flushes := dfaBudget, dfaMaxFlushes
	t.Cleanup(func() { dfaBudget, dfaMaxFlushes = budget, flushes })
	dfaBudget, dfaMaxFlushes = 1, 3
	pattern := `(a|b)*a(a|b){6}$`
	re := regexp.MustCompile(pattern)
	d, err := newLineDFA(mustParse(t, pattern))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	want := 0
	for i := range 300 {
		line := strings.NewReplacer("0", "a", "1", "b").Replace(fmt.Sprintf("%b", i*7919))
		fmt.Fprintln(&text, line)
		if re.MatchString(line) {
			want++
		}
	}
	gaveUp := false
	for _, line := range strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n") {
		got, ok := d.match([]byte(line))
		if !ok {
			gaveUp = true
			break
		}
		if got != re.MatchString(line) {
			t.Fatalf("after %d flushes, on %q: dfa %v", d.flushes, line, got)
		}
	}
	if !gaveUp || d.flushes <= dfaMaxFlushes {
		t.Fatalf("gave up %v after %d flushes, want to give up past %d", gaveUp, d.flushes, dfaMaxFlushes)
	}
	ws, _ := fuzzWorkspace(t, []byte(text.String()))
	r, err := ws.Grep(context.Background(), GrepInput{Pattern: pattern, Path: "f.txt"}, result.DefaultCap)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Structured.(*GrepReport).Total; got != want || want == 0 {
		t.Fatalf("grep counted %d lines, regexp %d", got, want)
	}
}

// FuzzLineDFA: the lineDFA answers as regexp.Match does, for any pattern
// and any line (without '\n'), asked twice (the second time on built
// states). Seeds: testdata/fuzz/FuzzLineDFA.
func FuzzLineDFA(f *testing.F) {
	f.Add(`\bfoo\b`, []byte("a foo_ foo."))
	f.Add(`(?i)\x{212a}|s$`, []byte("K\u017f"))
	f.Add(`^$|x\B`, []byte("\xffx"))
	f.Add(`[A-Z]+ worker-3 request id=[0-9]*7 `, []byte("INFO worker-3 request id=127 took"))
	f.Fuzz(func(t *testing.T, pattern string, line []byte) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		line = bytes.ReplaceAll(line, []byte{'\n'}, nil)
		d, err := newLineDFA(mustParse(t, pattern))
		if err != nil {
			t.Fatalf("%q compiled in regexp, not in the dfa: %v", pattern, err)
		}
		want := re.Match(line)
		for range 2 {
			got, ok := d.match(line)
			if ok && got != want {
				t.Fatalf("%q on %q: dfa %v, regexp %v", pattern, line, got, want)
			}
		}
	})
}

// naiveIndex is where lit is first in text, ASCII letters of text lowered
// when fold (lit is lowered then).
func naiveIndex(text, lit []byte, fold bool) int {
	if fold {
		text = lowerASCII(nil, text)
	}
	return bytes.Index(text, lit)
}

// The literal finder finds what bytes.Index finds: by its rarest byte at
// either end of the literal or inside it, when that byte is common in the
// text (it goes over to bytes.Index), and case-insensitively by a byte
// that is no letter.
func TestLiteralFinderFindsWhatBytesIndexFinds(t *testing.T) {
	common := strings.Repeat("q", 300) + "xq" + strings.Repeat("q ", 200) + "qx"
	for _, c := range []struct {
		text, lit string
		fold      bool
	}{
		{"a worker-3 request id=7", " request", false},
		{"request", "request", false},
		{"reques", "request", false},
		{"", "ab", false},
		{"xqxqx", "qx", false},
		{common, "qx", false},
		{common, "xq", false},
		{common, "q q", false},
		{"ERROR Worker-3", "error worker-3", true},
		{"ERROR Worker-4 error worker-3", "error worker-3", true},
		{"error worker-", "error worker-3", true},
		{"take 12ms and 13MS", "3ms", true},
	} {
		f := newLiteralFinder([]byte(c.lit), c.fold)
		if got, want := f.index([]byte(c.text)), naiveIndex([]byte(c.text), []byte(c.lit), c.fold); got != want {
			t.Errorf("finding %q (fold %v) by %q in %.40q: %d, want %d", c.lit, c.fold, f.rare, c.text, got, want)
		}
	}
	if f := newLiteralFinder([]byte("error"), true); f != nil {
		t.Errorf("a folded literal of letters has a finder, by %q", f.rare)
	}
	if f := newLiteralFinder([]byte(" worker-3 request id="), false); f.rare != 'q' {
		t.Errorf("looks for %q, want the rarest byte q", f.rare)
	}
}

// FuzzLiteralFinder: the finder finds what bytes.Index finds. Seeds:
// testdata/fuzz/FuzzLiteralFinder.
func FuzzLiteralFinder(f *testing.F) {
	f.Add([]byte("abc abc xq"), []byte("xq"), false)
	f.Add([]byte("ERROR 3ms"), []byte("r 3m"), true)
	f.Fuzz(func(t *testing.T, text, lit []byte, fold bool) {
		if len(lit) == 0 {
			return
		}
		if fold {
			lit = lowerASCII(nil, lit)
		}
		finder := newLiteralFinder(lit, fold)
		if finder == nil {
			return
		}
		if got, want := finder.index(text), naiveIndex(text, lit, fold); got != want {
			t.Fatalf("finding %q (fold %v) in %q: %d, want %d", lit, fold, text, got, want)
		}
	})
}
