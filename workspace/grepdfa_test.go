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
// (with the Kelvin sign and the long s), runes past ASCII, invalid UTF-8
// (a byte that is no character matches as U+FFFD does), empty matches and
// empty lines, repetitions and alternations.
func TestLineDFAMatchesAsRegexpDoesLineByLine(t *testing.T) {
	lines := []string{
		"", "a", "ab", "abc", " abc ", "xabcx", "ERROR worker-3 request id=17 took 4ms",
		"INFO worker-3 request id=27 took 40ms", "info worker-3 request id=7 ", "2026-12-02T10:00:01 took 123ms",
		"1.2.3", "v10.20.30-rc", "kelvin", "\u212aelvin", "ſs", "KELVIN", "é", "naïve café", "日本語のテキスト",
		"\xff\xfe", "a\xffb", "\xed\xa0\x80", "foo_bar baz", "foo-bar", "_", "word", "\r", "x\ry",
	}
	for _, pattern := range []string{
		"a", "abc", "^abc$", "^$", "^", "$", "a*", "x*$", `\bfoo\b`, `\Bar\B`, `\bbar`, `\b`, `\B`,
		`(?i)error worker-3`, `(?i)kelvin`, `(?i)s+`, `(?i)é`, `[A-Z]+ worker-3 request id=[0-9]*7 `,
		`[0-9]{3}ms`, `\d+\.\d+\.\d+`, `^\d`, `\d$`, `.`, `^.$`, `^.{3}$`, `\x{FFFD}`, `[^a-z]`, `\pL+`,
		`\p{Han}`, `[[:^alpha:]]`, `(a|ab)(c|bcd)`, `(?s).`, `(?m)^b`, `(?m)c$`, `\Aa`, `c\z`, "\\r",
		`(a+)+$`, `a{2,}b?`, `(?U)a+?`, `x|^$`, `(?:)`, `(^|b)c`, `a(\b|$)`, `[^\x00-\x7f]`, `日本`,
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
