package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Edits of one file at once (a host's and an agent's under mcp serve,
// two subagents') each read the file, replace and write it back: without
// a lock the second write undid the first while both said they replaced
// their text (400 edits reported, 269 in the file). Every edit reported
// must be in the file, and writes of other files are not held up.
func TestEditsOfOneFileAtOnceLoseNoEdit(t *testing.T) {
	dir := t.TempDir()
	const each = 100
	var lines []string
	for g := range 4 {
		for i := range each {
			lines = append(lines, fmt.Sprintf("g%d-line%d old", g, i))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4*each)
	for g := range 4 {
		wg.Go(func() {
			for i := range each {
				old := fmt.Sprintf("g%d-line%d old", g, i)
				if _, err := w.Edit(EditInput{Path: "f.txt", OldString: old, NewString: strings.Replace(old, "old", "new", 1)}); err != nil {
					errs <- fmt.Errorf("edit %s: %w", old, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if lost := strings.Count(string(data), " old\n"); lost != 0 {
		t.Fatalf("%d of %d edits that reported success are not in the file", lost, 4*each)
	}
	if n := strings.Count(string(data), " new\n"); n != 4*each {
		t.Fatalf("%d edits in the file, want %d", n, 4*each)
	}
	if len(w.changing.held) != 0 {
		t.Errorf("%d path locks left after every change ended", len(w.changing.held))
	}
}
