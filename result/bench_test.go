package result

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// logText is about size bytes of log-like lines, valid UTF-8; with
// multilingual set, a third of each line is non-ASCII.
func logText(size int, multilingual bool) string {
	var b strings.Builder
	b.Grow(size + 200)
	for i := 0; b.Len() < size; i++ {
		if multilingual {
			fmt.Fprintf(&b, "2026-12-02T10:00:%02d worker-%d 处理请求 — résumé ok, ключ=%d\n", i%60, i%7, i)
		} else {
			fmt.Fprintf(&b, "2026-12-02T10:00:%02d worker-%d handled request id=%d status=200 bytes=%d\n", i%60, i%7, i, i*13)
		}
	}
	return b.String()
}

// BenchmarkText64MB compares the text of a valid 64 MB string result with
// utf8.ValidString on the same string (target: ≤ 1.2×). Run:
//
//	go test ./result -run '^$' -bench Text64MB -count 5
func BenchmarkText64MB(b *testing.B) {
	for _, kind := range []struct {
		name string
		ml   bool
	}{{"ascii", false}, {"multilingual", true}} {
		s := logText(64<<20, kind.ml)
		b.Run(kind.name+"/utf8.ValidString", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if !utf8.ValidString(s) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(kind.name+"/result-text", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if c := convert(Result{Data: s}, nil, spillLabel{"d", "x"}, DefaultCap); len(c.text) != len(s) {
					b.Fatal("changed")
				}
			}
		})
	}
}

// BenchmarkTextFile200MB is the conversion of a 200 MB well-formed output
// file (in the page cache) into its spill: the scan and the move.
func BenchmarkTextFile200MB(b *testing.B) {
	dir := b.TempDir()
	content := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxy\n", 200_000_000/26))
	store := &dirStore{dir: dir}
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		b.StopTimer()
		src := filepath.Join(dir, "out")
		if err := os.WriteFile(src, content, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out := One(Call{ID: "big", Result: Result{Data: TextFile{Path: src}}}, Env{Store: store})
		b.StopTimer()
		if out.SpillPath == "" {
			b.Fatal("no spill")
		}
		os.Remove(filepath.Join(dir, out.SpillPath))
		b.StartTimer()
	}
}
