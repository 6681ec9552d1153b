package workspace

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// The tools' errors are worded for the model, and keep the error they
// explain underneath: a caller tells a missing file by errors.Is, never by
// the words.

func TestReadOfAMissingFileWrapsErrNotExist(t *testing.T) {
	f := newFixture(t)
	_, err := f.ws.Read(ReadInput{Path: "missing.txt"}, 0)
	if err == nil {
		t.Fatal("reading a missing file gave no error")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the error %q does not wrap fs.ErrNotExist", err)
	}
	if want := "missing.txt does not exist in the workspace"; err.Error() != want {
		t.Errorf("the error says %q, want %q", err, want)
	}
}

func TestReadThroughAFileWrapsENOTDIR(t *testing.T) {
	f := newFixture(t)
	f.write(t, "file.txt", "text\n")
	_, err := f.ws.Read(ReadInput{Path: "file.txt/inner.txt"}, 0)
	if err == nil {
		t.Fatal("reading under a file gave no error")
	}
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("the error %q does not wrap ENOTDIR", err)
	}
}

func TestOpenOfAMissingDirectoryWrapsErrNotExist(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a missing workspace gave %v, which does not wrap fs.ErrNotExist", err)
	}
}

func TestGrepUnderACancelledContextWrapsContextCanceled(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "needle\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.ws.Grep(ctx, GrepInput{Pattern: "needle"}, 10000)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("grep under a cancelled context gave %v, which does not wrap context.Canceled", err)
	}
}

func TestSaveFileOfAMissingSourceWrapsErrNotExist(t *testing.T) {
	f := newFixture(t)
	_, err := f.ws.SaveFile("out.txt", filepath.Join(f.dir, "no-such-source"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("saving from a missing file gave %v, which does not wrap fs.ErrNotExist", err)
	}
}
