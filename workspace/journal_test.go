package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// told is a Journal that records each Change and what the file held
// when it was told (nil when there was none), and fails with err.
type told struct {
	f       *fixture
	changes []Change
	onDisk  [][]byte
	err     error
}

func (j *told) journal(_ context.Context, c Change) error {
	j.changes = append(j.changes, c)
	data, err := os.ReadFile(filepath.Join(j.f.dir, filepath.FromSlash(c.Path)))
	if err != nil {
		data = nil
	}
	j.onDisk = append(j.onDisk, data)
	return j.err
}

// callJournaled runs a tool through the dispatcher with j in its context.
func (f *fixture) callJournaled(t *testing.T, j *told, name string, input any) result.Output {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return f.d.Call(WithJournal(context.Background(), j.journal), tool.Call{ID: "t", Name: name, Input: raw})
}

func (f *fixture) read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestAWriteOfANewFileTellsItsJournalBeforeTheFileExists(t *testing.T) {
	f := newFixture(t)
	j := &told{f: f}
	if out := f.callJournaled(t, j, "workspace--write", WriteInput{Path: "dir/new.txt", Content: "hello\n"}); out.IsError {
		t.Fatal(out.Text)
	}
	if len(j.changes) != 1 {
		t.Fatalf("the journal was told %d changes, want 1", len(j.changes))
	}
	c := j.changes[0]
	if c.Path != "dir/new.txt" || c.Existed || c.Before != nil || c.BeforeKept || string(c.After) != "hello\n" {
		t.Fatalf("the journal was told %+v, want a new dir/new.txt holding hello", c)
	}
	if j.onDisk[0] != nil {
		t.Fatalf("the file existed when the journal was told: %q", j.onDisk[0])
	}
	if got := f.read(t, "dir/new.txt"); got != "hello\n" {
		t.Fatalf("the file holds %q, want hello", got)
	}
}

func TestAWriteOverAFileTellsItsJournalWhatItReplaces(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "old\n")
	j := &told{f: f}
	if out := f.callJournaled(t, j, "workspace--write", WriteInput{Path: "a.txt", Content: "new\n"}); out.IsError {
		t.Fatal(out.Text)
	}
	if len(j.changes) != 1 {
		t.Fatalf("the journal was told %d changes, want 1", len(j.changes))
	}
	c := j.changes[0]
	if c.Path != "a.txt" || !c.Existed || !c.BeforeKept || string(c.Before) != "old\n" || string(c.After) != "new\n" {
		t.Fatalf("the journal was told %+v, want a.txt from old to new", c)
	}
	if string(j.onDisk[0]) != "old\n" {
		t.Fatalf("the file held %q when the journal was told, want the old content: it must be told before", j.onDisk[0])
	}
}

func TestAnEditTellsItsJournalBeforeAndAfter(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.go", "package a\n\nfunc A() {}\n")
	j := &told{f: f}
	if out := f.callJournaled(t, j, "workspace--edit", EditInput{Path: "a.go", OldString: "A()", NewString: "B()"}); out.IsError {
		t.Fatal(out.Text)
	}
	if len(j.changes) != 1 {
		t.Fatalf("the journal was told %d changes, want 1", len(j.changes))
	}
	c := j.changes[0]
	if c.Path != "a.go" || !c.Existed || !c.BeforeKept || string(c.Before) != "package a\n\nfunc A() {}\n" || string(c.After) != "package a\n\nfunc B() {}\n" {
		t.Fatalf("the journal was told %+v, want a.go from A to B", c)
	}
	if string(j.onDisk[0]) != string(c.Before) {
		t.Fatalf("the file held %q when the journal was told, want the content before the edit", j.onDisk[0])
	}
}

func TestTheJournalIsToldThePathAWriteResolvesTo(t *testing.T) {
	f := newFixture(t)
	f.write(t, "real/target.txt", "old")
	if err := os.Symlink("real", filepath.Join(f.dir, "link")); err != nil {
		t.Fatal(err)
	}
	j := &told{f: f}
	if out := f.callJournaled(t, j, "workspace--write", WriteInput{Path: "link/target.txt", Content: "new"}); out.IsError {
		t.Fatal(out.Text)
	}
	if len(j.changes) != 1 || j.changes[0].Path != "real/target.txt" || string(j.changes[0].Before) != "old" {
		t.Fatalf("the journal was told %+v, want the file the write replaced: real/target.txt", j.changes)
	}
}

func TestAJournalErrorLeavesTheFileAsItWasAndSaysWhy(t *testing.T) {
	cause := errors.New("the store is full")
	for _, tc := range []struct {
		name  string
		call  func(ws *Workspace, ctx context.Context) error
		exist bool
	}{
		{"write over a file", func(ws *Workspace, ctx context.Context) error {
			_, err := ws.WriteContext(ctx, WriteInput{Path: "a.txt", Content: "new\n"})
			return err
		}, true},
		{"write of a new file", func(ws *Workspace, ctx context.Context) error {
			_, err := ws.WriteContext(ctx, WriteInput{Path: "b.txt", Content: "new\n"})
			return err
		}, false},
		{"edit", func(ws *Workspace, ctx context.Context) error {
			_, err := ws.EditContext(ctx, EditInput{Path: "a.txt", OldString: "old", NewString: "new"})
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write(t, "a.txt", "old\n")
			j := &told{f: f, err: cause}
			err := tc.call(f.ws, WithJournal(context.Background(), j.journal))
			if !errors.Is(err, cause) || !strings.Contains(err.Error(), "was not changed") || !strings.Contains(err.Error(), "rewind") {
				t.Fatalf("the error is %v, want one saying the file was not changed as it could not be kept for a rewind, wrapping %v", err, cause)
			}
			if got := f.read(t, "a.txt"); got != "old\n" {
				t.Fatalf("a.txt holds %q after the refused change, want it as it was", got)
			}
			if _, err := os.Stat(filepath.Join(f.dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("b.txt exists after the refused write: %v", err)
			}
		})
	}
	// through the tool, as the model sees it
	f := newFixture(t)
	f.write(t, "a.txt", "old\n")
	out := f.callJournaled(t, &told{f: f, err: cause}, "workspace--write", WriteInput{Path: "a.txt", Content: "new\n"})
	if !out.IsError || !strings.Contains(out.Text, "the store is full") {
		t.Fatalf("the tool's result is %+v, want an error naming the cause", out)
	}
	if got := f.read(t, "a.txt"); got != "old\n" {
		t.Fatalf("a.txt holds %q, want it as it was", got)
	}
}

func TestAFileOverMaxJournaledIsWrittenWithoutItsOldContent(t *testing.T) {
	f := newFixture(t)
	big := bytes.Repeat([]byte("x"), MaxJournaled)
	big = append(big, "\nold\n"...)
	f.write(t, "big.txt", string(big))
	j := &told{f: f}
	if out := f.callJournaled(t, j, "workspace--edit", EditInput{Path: "big.txt", OldString: "old", NewString: "new"}); out.IsError {
		t.Fatal(out.Text)
	}
	if out := f.callJournaled(t, j, "workspace--write", WriteInput{Path: "big.txt", Content: "small"}); out.IsError {
		t.Fatal(out.Text)
	}
	if len(j.changes) != 2 {
		t.Fatalf("the journal was told %d changes, want 2", len(j.changes))
	}
	for i, c := range j.changes {
		if !c.Existed || c.BeforeKept || c.Before != nil {
			t.Fatalf("change %d: Existed %v, BeforeKept %v, %d bytes before; want a file that existed and whose content over MaxJournaled was not read", i, c.Existed, c.BeforeKept, len(c.Before))
		}
	}
	if len(j.changes[0].After) != len(big) {
		t.Fatalf("the edit told %d bytes after, want %d", len(j.changes[0].After), len(big))
	}
	if got := f.read(t, "big.txt"); got != "small" {
		t.Fatalf("big.txt holds %d bytes, want the write's", len(got))
	}
}

func TestWithoutAJournalNothingIsToldAndWriteAndEditWorkAsBefore(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "old\n")
	if _, err := f.ws.Write(WriteInput{Path: "a.txt", Content: "mid\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ws.Edit(EditInput{Path: "a.txt", OldString: "mid", NewString: "new"}); err != nil {
		t.Fatal(err)
	}
	// a nil Journal is none
	if _, err := f.ws.WriteContext(WithJournal(context.Background(), nil), WriteInput{Path: "b.txt", Content: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "a.txt") + f.read(t, "b.txt"); got != "new\nb" {
		t.Fatalf("the files hold %q, want new and b", got)
	}
}
