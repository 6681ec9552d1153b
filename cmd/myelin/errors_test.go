package main

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A flag's input that cannot be read says which flag and input, and keeps
// the error underneath.
func TestArgsFromAMissingFileWrapErrNotExist(t *testing.T) {
	_, err := callArgs("@"+filepath.Join(t.TempDir(), "missing.json"), strings.NewReader(""))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ARGS_JSON from a missing file gave %v, which does not wrap fs.ErrNotExist", err)
	}
}
