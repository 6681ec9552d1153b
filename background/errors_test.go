package background

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/workspace"
)

// A state that cannot be written says which, and keeps the workspace's
// error underneath: a linked state directory is an *OwnLinkError.
func TestWritingAStateThroughALinkWrapsTheOwnLinkError(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(Dir))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	err := writeState(root, state{ID: "bg_1"})
	var le *workspace.OwnLinkError
	if !errors.As(err, &le) {
		t.Errorf("writing a state into a linked directory gave %v, which does not wrap a *workspace.OwnLinkError", err)
	}
}
