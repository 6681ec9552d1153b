package workspace

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

func fuzzWorkspace(t *testing.T, content []byte) (*Workspace, *tool.Dispatcher) {
	f := newFixture(t)
	f.write(t, "f.txt", string(content))
	return f.ws, f.d
}

// checkPage: a page is well formed, fits its cap and never spills.
func checkPage(t *testing.T, out result.Output, cap int) {
	t.Helper()
	if !utf8.ValidString(out.Text) {
		t.Fatalf("text is not valid UTF-8: %q", out.Text)
	}
	if n := utf8.RuneCountInString(out.Text); n > cap || out.SpillPath != "" {
		t.Fatalf("page is %d characters (cap %d), spill %q", n, cap, out.SpillPath)
	}
	if out.Structured != nil && !json.Valid(out.Structured) {
		t.Fatalf("structured content is not valid JSON: %s", out.Structured)
	}
}

// FuzzRead reads arbitrary files by line and by character. Seeds:
// testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), 1, 2, false)
	f.Add([]byte("x\r\ny\xff\xed\xa0\x80z"), 0, 3, true)
	f.Add([]byte("\x00binary"), 1, 1, false)
	f.Fuzz(func(t *testing.T, content []byte, offset, limit int, chars bool) {
		_, d := fuzzWorkspace(t, content)
		in := map[string]any{"path": "f.txt", "offset": offset, "limit": limit}
		if chars {
			in = map[string]any{"path": "f.txt", "offsetChars": offset, "limitChars": limit}
		}
		raw, _ := json.Marshal(in)
		out := d.Call(context.Background(), tool.Call{ID: "fuzz", Name: "workspace--read", Input: raw, Cap: 1000})
		checkPage(t, out, 1000)
	})
}

// FuzzGrep searches arbitrary files for arbitrary patterns. Seeds:
// testdata/fuzz/FuzzGrep.
func FuzzGrep(f *testing.F) {
	f.Add([]byte("alpha\nbeta\ngamma\n"), "a$", uint8(1))
	f.Add([]byte("x\r\n\xffy\n"), "(", uint8(0))
	f.Add([]byte("aaaa"), "a*", uint8(3))
	f.Fuzz(func(t *testing.T, content []byte, pattern string, context_ uint8) {
		_, d := fuzzWorkspace(t, content)
		raw, _ := json.Marshal(map[string]any{"pattern": pattern, "path": "f.txt", "context": int(context_ % 5)})
		out := d.Call(context.Background(), tool.Call{ID: "fuzz", Name: "workspace--grep", Input: raw, Cap: 1000})
		checkPage(t, out, 1000)
	})
}

// FuzzGrepCount: whichever way grep finds candidate lines (a literal, a
// case-folded literal, the regexp over a chunk, line by line for CRLF), it
// counts the lines a line-by-line match counts, a line's CR set aside.
func FuzzGrepCount(f *testing.F) {
	f.Add([]byte("Error one\r\nerror two\nERR\n\u212aelvin\n"), "(?i)error|kelvin$")
	f.Add([]byte("ab\r\ncd\r\n"), "^..$")
	f.Add([]byte("x worker-3 id=7 \ny worker-3 id=8 \n"), "[a-z]+ worker-3 id=[0-9]*7 ")
	f.Fuzz(func(t *testing.T, content []byte, pattern string) {
		re, err := regexp.Compile(pattern)
		if err != nil || result.LooksBinary(string(content[:min(len(content), 8192)])) {
			return
		}
		text := strings.TrimSuffix(string(content), "\n")
		want := 0
		if len(content) > 0 {
			for _, line := range strings.Split(text, "\n") {
				if re.MatchString(strings.TrimSuffix(line, "\r")) {
					want++
				}
			}
		}
		ws, _ := fuzzWorkspace(t, content)
		r, err := ws.Grep(context.Background(), GrepInput{Pattern: pattern, Path: "f.txt"}, result.DefaultCap)
		if err != nil {
			return
		}
		if got := r.Structured.(*GrepReport).Total; got != want {
			t.Fatalf("grep %q over %q: %d lines, a line-by-line match finds %d", pattern, content, got, want)
		}
	})
}
