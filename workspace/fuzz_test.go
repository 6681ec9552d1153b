package workspace

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"myelin/result"
	"myelin/tool"
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
