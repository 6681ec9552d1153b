package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/tool"
)

// fakeStore is a Fetch over files kept in memory, as a shared store keeps
// them: it records what it is asked for.
type fakeStore struct {
	files map[string]string // path → bytes
	sums  map[string]string // path → a hash to give instead of the right one
	err   error             // given for every path, when set
	asked []string
}

func (s *fakeStore) fetch(ctx context.Context, p string) ([]byte, string, error) {
	s.asked = append(s.asked, p)
	if s.err != nil {
		return nil, "", s.err
	}
	data, ok := s.files[p]
	if !ok {
		return nil, "", fmt.Errorf("no file %s: %w", p, fs.ErrNotExist)
	}
	if sum, ok := s.sums[p]; ok {
		return []byte(data), sum, nil
	}
	return []byte(data), sha256Hex([]byte(data)), nil
}

// callWith runs a tool through the dispatcher with ctx, as the agent does
// for a conversation.
func (f *fixture) callWith(t *testing.T, ctx context.Context, name string, input any) (text string, isError bool) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	out := f.d.Call(ctx, tool.Call{ID: "t", Name: name, Input: raw})
	return out.Text, out.IsError
}

const fetchedSpill = ".myelin/tool-results/20261203-call_7.txt"

func TestAReadOfAMissingSpillFileWritesItFromTheStoreAndReadsItAsTheOriginal(t *testing.T) {
	content := lines(3000) // more than a page: the footer's next call must match too
	// on the workspace that wrote it
	a := newFixture(t)
	path, err := a.ws.Save("20261203-call_7.txt", content)
	if err != nil || path != fetchedSpill {
		t.Fatalf("Save = %q, %v", path, err)
	}
	want, wantErr := a.callWith(t, context.Background(), "workspace--read", map[string]any{"path": fetchedSpill, "offset": 2001})
	// on an empty workspace whose store keeps it
	b := newFixture(t)
	store := &fakeStore{files: map[string]string{fetchedSpill: content}}
	ctx := WithFetch(context.Background(), store.fetch)
	got, gotErr := b.callWith(t, ctx, "workspace--read", map[string]any{"path": fetchedSpill, "offset": 2001})
	if got != want || gotErr != wantErr || gotErr {
		t.Fatalf("read on another workspace:\n%q (error %v)\nwant, as on the one that wrote it:\n%q", got, gotErr, want)
	}
	data, err := os.ReadFile(filepath.Join(b.dir, fetchedSpill))
	if err != nil || string(data) != content {
		t.Fatalf("the file written: %d bytes, %v; want the %d kept", len(data), err, len(content))
	}
	stA, _ := os.Stat(filepath.Join(a.dir, fetchedSpill))
	stB, _ := os.Stat(filepath.Join(b.dir, fetchedSpill))
	if stA.Mode() != stB.Mode() {
		t.Fatalf("the file written has mode %v, a spill file %v", stB.Mode(), stA.Mode())
	}
	entries, _ := os.ReadDir(filepath.Join(b.dir, ResultsDir))
	if len(entries) != 1 {
		t.Fatalf("the results directory holds %v; want the fetched file alone (no temporary left)", entries)
	}
	// the next read finds it here and asks the store nothing
	b.callWith(t, ctx, "workspace--read", map[string]any{"path": fetchedSpill})
	if len(store.asked) != 1 {
		t.Fatalf("the store was asked %v; want once", store.asked)
	}
}

func TestAGrepNamingAMissingSpillFileWritesItFromTheStore(t *testing.T) {
	f := newFixture(t)
	store := &fakeStore{files: map[string]string{fetchedSpill: "alpha\nneedle here\nomega\n"}}
	text, isErr := f.callWith(t, WithFetch(context.Background(), store.fetch), "workspace--grep", map[string]any{"pattern": "needle", "path": fetchedSpill})
	if isErr || !strings.Contains(text, fetchedSpill+":2:needle here") {
		t.Fatalf("grep of the missing spill file = %q (error %v); want its match", text, isErr)
	}
}

func TestOnlyAMissingFileDirectlyUnderTheResultsDirectoryIsFetched(t *testing.T) {
	for _, c := range []struct {
		name, path string
		here       string // what the workspace holds at path, "" for nothing
		says       string // what the read's error says
	}{
		{"a file elsewhere in the workspace", "notes.txt", "", "does not exist"},
		{"a file in another directory of .myelin", ".myelin/logs/x.txt", "", "does not exist"},
		{"a file below a directory of the results directory", ResultsDir + "/sub/x.txt", "", "does not exist"},
		{"the results directory itself", ResultsDir, "", "does not exist"},
		{"a path that leads out", "../outside/secret.txt", "", `contains ".."`},
		{"a spill file that is here", fetchedSpill, "mine\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.here != "" {
				f.write(t, c.path, c.here)
			}
			store := &fakeStore{files: map[string]string{c.path: "from the store\n"}}
			text, isErr := f.callWith(t, WithFetch(context.Background(), store.fetch), "workspace--read", map[string]any{"path": c.path})
			if len(store.asked) != 0 {
				t.Fatalf("the store was asked for %v", store.asked)
			}
			if c.says != "" && (!isErr || !strings.Contains(text, c.says)) {
				t.Fatalf("read = %q (error %v); want an error saying %q", text, isErr, c.says)
			}
			if c.here != "" && (isErr || !strings.Contains(text, "mine")) {
				t.Fatalf("read = %q; want the file that is here, unchanged", text)
			}
			f.assertOutsideUntouched(t)
		})
	}
}

func TestAFetchThatCannotBeTrustedWritesNothingAndSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name  string
		store *fakeStore
		says  string
	}{
		{"the store keeps no such file", &fakeStore{}, "does not exist in the workspace"},
		{"the store fails", &fakeStore{err: errors.New("connection refused")}, "fetching it from the conversation's store failed: connection refused"},
		{"the bytes do not match their hash", &fakeStore{files: map[string]string{fetchedSpill: "x\n"}, sums: map[string]string{fetchedSpill: sha256Hex([]byte("y\n"))}},
			"the store's copy is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			text, isErr := f.callWith(t, WithFetch(context.Background(), c.store.fetch), "workspace--read", map[string]any{"path": fetchedSpill})
			if !isErr || !strings.Contains(text, c.says) || !strings.Contains(text, fetchedSpill) {
				t.Fatalf("read = %q (error %v); want an error naming the file and saying %q", text, isErr, c.says)
			}
			if _, err := os.Lstat(filepath.Join(f.dir, fetchedSpill)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file was written: %v", err)
			}
			if entries, _ := os.ReadDir(filepath.Join(f.dir, ResultsDir)); len(entries) != 0 {
				t.Fatalf("the results directory holds %v; want nothing", entries)
			}
		})
	}
}

func TestWithoutAFetchAMissingSpillFileDoesNotExist(t *testing.T) {
	f := newFixture(t)
	text, isErr := f.callWith(t, context.Background(), "workspace--read", map[string]any{"path": fetchedSpill})
	if !isErr || !strings.Contains(text, "does not exist") {
		t.Fatalf("read = %q (error %v); want does not exist", text, isErr)
	}
}

func TestAResultsDirectoryThatIsALinkIsNotWrittenThrough(t *testing.T) {
	for _, c := range []struct {
		name   string
		target func(f *fixture) string
	}{
		{"out of the workspace", func(f *fixture) string { return f.outside }},
		{"to another directory of the workspace", func(f *fixture) string { return filepath.Join(f.dir, "elsewhere") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if err := os.MkdirAll(filepath.Join(f.dir, ".myelin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(f.dir, "elsewhere"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(c.target(f), filepath.Join(f.dir, ResultsDir)); err != nil {
				t.Fatal(err)
			}
			store := &fakeStore{files: map[string]string{fetchedSpill: "from the store\n"}}
			text, isErr := f.callWith(t, WithFetch(context.Background(), store.fetch), "workspace--read", map[string]any{"path": fetchedSpill})
			if !isErr {
				t.Fatalf("read through a link = %q; want an error", text)
			}
			if entries, _ := os.ReadDir(filepath.Join(f.dir, "elsewhere")); len(entries) != 0 {
				t.Fatalf("written through the link: %v", entries)
			}
			f.assertOutsideUntouched(t)
		})
	}
}

func TestAFileMadeWhileFetchingIsKeptNotReplaced(t *testing.T) {
	f := newFixture(t)
	store := &fakeStore{files: map[string]string{fetchedSpill: "from the store\n"}}
	racing := func(ctx context.Context, p string) ([]byte, string, error) {
		f.write(t, p, "made meanwhile\n") // another read wrote it first
		return store.fetch(ctx, p)
	}
	text, isErr := f.callWith(t, WithFetch(context.Background(), racing), "workspace--read", map[string]any{"path": fetchedSpill})
	if isErr || !strings.Contains(text, "made meanwhile") {
		t.Fatalf("read = %q (error %v); want the file made meanwhile", text, isErr)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, ResultsDir)); len(entries) != 1 {
		t.Fatalf("the results directory holds %v; want the one file (no temporary left)", entries)
	}
}

func TestReadResultReadsWhatSaveWroteAndNothingElse(t *testing.T) {
	f := newFixture(t)
	p, err := f.ws.Save("x.txt", "saved\n")
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "notes.txt", "notes\n")
	f.write(t, ResultsDir+"/sub/y.txt", "below\n")
	for _, c := range []struct {
		path, want, says string
	}{
		{p, "saved\n", ""},
		{"notes.txt", "", "is not a file of " + ResultsDir},
		{ResultsDir + "/sub/y.txt", "", "is not a file of " + ResultsDir},
		{ResultsDir + "/../notes.txt", "", `contains ".."`},
		{ResultsDir + "/missing.txt", "", "does not exist"},
	} {
		data, err := f.ws.ReadResult(c.path)
		if c.says == "" && (err != nil || string(data) != c.want) {
			t.Fatalf("ReadResult(%q) = %q, %v; want %q", c.path, data, err, c.want)
		}
		if c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)) {
			t.Fatalf("ReadResult(%q) = %q, %v; want an error saying %q", c.path, data, err, c.says)
		}
	}
}
