package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// blobs is e's store as history.Blobs; it skips t for a store that keeps
// no files.
func (e *env) blobs(t *testing.T, s history.Store) history.Blobs {
	t.Helper()
	b, ok := s.(history.Blobs)
	if !ok {
		t.Skip("the store keeps no files")
	}
	return b
}

// errAny stands for "some error" in filesKept's table.
var errAny = errors.New("any error")

// filesKept checks history.Blobs: files kept once per content, named by
// conversation and path, a path never given other bytes, every file given
// back byte for byte by path and by hash — to another opening too.
func filesKept(t *testing.T, s Subject) {
	e := s.env(t)
	b := e.blobs(t, e.s)
	e.conversation("b1")
	e.conversation("b2")
	const spill = ".myelin/tool-results/20261203-call_1.txt"
	text := []byte("line 1\nline 2\n")
	binary := []byte{0, 0xff, 0xfe, 'x', 0, '\n'}
	for _, st := range []struct {
		name, id, path string
		data           []byte
		want           error  // nil: kept
		says           string // words the error must hold
	}{
		{"a new file is kept", "b1", spill, text, nil, ""},
		{"the same bytes again are a no-op", "b1", spill, text, nil, ""},
		{"other bytes at a kept path are refused, saying so", "b1", spill, []byte("line 1\n"), history.ErrBlobTaken, spill},
		{"the same bytes under another path are kept", "b1", ".myelin/tool-results/copy.txt", text, nil, ""},
		{"the same path in another conversation is its own", "b2", spill, binary, nil, ""},
		{"binary bytes are kept as they are", "b1", ".myelin/tool-results/a.bin", binary, nil, ""},
		{"an empty file is kept", "b1", ".myelin/tool-results/empty.txt", []byte{}, nil, ""},
		{"an unknown conversation is not found", "nope", spill, text, history.ErrNotFound, "nope"},
		{"no conversation id is refused", "", spill, text, errAny, "no conversation"},
		{"no path is refused", "b1", "", text, errAny, "no path"},
	} {
		hash, err := b.PutBlob(e.ctx, st.id, st.path, st.data)
		switch {
		case st.want == nil && err != nil:
			t.Fatalf("%s: PutBlob: %v", st.name, err)
		case st.want == nil && hash != history.BlobHash(st.data):
			t.Fatalf("%s: PutBlob's hash is %q, want BlobHash's %q", st.name, hash, history.BlobHash(st.data))
		case st.want == errAny && err == nil, st.want != nil && st.want != errAny && !errors.Is(err, st.want):
			t.Fatalf("%s: PutBlob = %v, want an error wrapping %v", st.name, err, st.want)
		case st.want != nil && !strings.Contains(err.Error(), st.says):
			t.Fatalf("%s: the error %q does not say %q", st.name, err, st.says)
		}
	}
	reads := []struct {
		name, id, path string
		want           []byte // nil: not found
	}{
		{"a kept file comes back", "b1", spill, text},
		{"the second path of the same bytes", "b1", ".myelin/tool-results/copy.txt", text},
		{"the other conversation's file at that path", "b2", spill, binary},
		{"binary bytes come back byte for byte", "b1", ".myelin/tool-results/a.bin", binary},
		{"an empty file comes back empty", "b1", ".myelin/tool-results/empty.txt", []byte{}},
		{"a path never kept is not found", "b1", ".myelin/tool-results/other.txt", nil},
		{"a path of another conversation is not found", "b2", ".myelin/tool-results/a.bin", nil},
		{"an unknown conversation is not found", "nope", spill, nil},
	}
	check := func(b history.Blobs, who string) {
		for _, r := range reads {
			hash, data, err := b.BlobAt(e.ctx, r.id, r.path)
			if r.want == nil {
				if !errors.Is(err, history.ErrNotFound) {
					t.Fatalf("%s, %s: BlobAt = %q, %v; want ErrNotFound", who, r.name, data, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(data, r.want) || data == nil || hash != history.BlobHash(r.want) {
				t.Fatalf("%s, %s: BlobAt = %q, %q, %v; want %q, %q", who, r.name, hash, data, err, r.want, history.BlobHash(r.want))
			}
			byHash, err := b.BlobByHash(e.ctx, hash)
			if err != nil || !bytes.Equal(byHash, r.want) {
				t.Fatalf("%s, %s: BlobByHash(%s) = %q, %v; want %q", who, r.name, hash, byHash, err, r.want)
			}
		}
		if data, err := b.BlobByHash(e.ctx, history.BlobHash([]byte("never kept"))); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("%s: BlobByHash of bytes never kept = %q, %v; want ErrNotFound", who, data, err)
		}
	}
	check(b, "the store that kept them")
	check(e.blobs(t, e.open()), "another opening")

	// what a caller does with the slices it gave or got changes nothing kept
	mine := []byte("mine\n")
	if _, err := b.PutBlob(e.ctx, "b1", ".myelin/tool-results/mine.txt", mine); err != nil {
		t.Fatal(err)
	}
	mine[0] = 'X'
	_, got, err := b.BlobAt(e.ctx, "b1", ".myelin/tool-results/mine.txt")
	if err != nil || string(got) != "mine\n" {
		t.Fatalf("after the caller changed the bytes it gave: %q, %v; want %q", got, err, "mine\n")
	}
	got[0] = 'Y'
	if _, again, _ := b.BlobAt(e.ctx, "b1", ".myelin/tool-results/mine.txt"); string(again) != "mine\n" {
		t.Fatalf("after the caller changed the bytes it got: %q; want %q", again, "mine\n")
	}
}
