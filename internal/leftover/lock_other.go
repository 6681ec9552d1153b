//go:build !unix

package leftover

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MakeDir makes a new directory of k in os.TempDir(), under the name no
// sweep takes: there is no flock here, so nothing tells a left one from
// one in use, and none is swept.
func (k *Kind) MakeDir(label string) (Dir, error) {
	if strings.ContainsAny(label, "/*\\") {
		return Dir{}, fmt.Errorf("the temp dir label %q holds a / or a *", label)
	}
	made, err := os.MkdirTemp("", k.unlockedPattern(label))
	if err != nil {
		return Dir{}, err
	}
	path, err := filepath.EvalSymlinks(made)
	if err != nil {
		_ = os.Remove(made)
		return Dir{}, fmt.Errorf("resolving the temp dir %s: %w", made, err)
	}
	return Dir{Path: path}, nil
}

// Create creates a new file of k in os.TempDir(), under the name no sweep
// takes (no flock here), open for reading and writing.
func (k *Kind) Create() (*os.File, error) {
	return os.CreateTemp("", k.unlockedPattern(""))
}

// Sweep removes nothing here: without locks, nothing tells a left entry
// from one in use.
func (k *Kind) Sweep(dir string) int { return 0 }
