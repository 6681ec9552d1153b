package workspace

import (
	"strings"
	"testing"
)

// BenchmarkWriteSmall is the workspace--write of a 4 KB file over an
// existing one, as a model's write of a source file is: the checks, the
// lock and the whole replacement (internal/wholefile, Unsynced: a new
// file renamed over the old, nothing synced). It pins the write's cost: a
// sync slipped back in shows as twice the time or more. Run:
//
//	go test ./workspace -run '^$' -bench WriteSmall -count 6
func BenchmarkWriteSmall(b *testing.B) {
	ws, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	in := WriteInput{Path: "src/x.go", Content: strings.Repeat("x", 4096)}
	if _, err := ws.Write(in); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ws.Write(in); err != nil {
			b.Fatal(err)
		}
	}
}
