package storetest

import (
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// fileChangesKept: the workspace files a call changed, stored with its
// result (history.Part.Files, docs/branches.md "Files go back"), come
// back whole and in order — from another opening, its message's checksum
// verified on the read — whether the result was kept as its call
// finished or appended with its round: a rewind reads them there.
func fileChangesKept(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	before, after := history.BlobHash([]byte("old\n")), history.BlobHash([]byte("new\n"))
	files := []history.FileChange{
		{Path: "a.txt", Before: before, After: after},
		{Path: `dir/"new" <&> é.txt`, Created: true, After: history.BlobHash(nil)},
		{Path: "big.bin", Before: "", After: ""}, // both over history.MaxKeptFile
		{Path: "a.txt", Before: after, After: before},
	}
	want := SampleMessages()
	want[2].Parts[0].Files = files
	if err := e.s.Append(e.ctx, "c", want[:2]...); err != nil {
		t.Fatal(err)
	}
	kept := history.Part{Type: history.ToolResultPart, CallID: "toolu_1", Text: "kept", Files: files[:2]}
	if err := e.s.Keep(e.ctx, "c", kept); err != nil {
		t.Fatal(err)
	}
	got, err := e.open().Kept(e.ctx, "c")
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Files, kept.Files) {
		t.Fatalf("the kept result comes back as %+v (%v), want its files %+v", got, err, kept.Files)
	}
	if err := e.s.Append(e.ctx, "c", want[2]); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.open().Messages(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, msgs, want)
	if got := msgs[2].Parts[0].Files; !reflect.DeepEqual(got, files) {
		t.Fatalf("the result's files come back as %+v, want %+v", got, files)
	}
	if got := msgs[1].Parts[1].Files; got != nil {
		t.Fatalf("a call with no files comes back with %+v", got)
	}
}
