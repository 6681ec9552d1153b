package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/myelin-run/myelin/workspace"
)

// myelin's own files in the workspace (docs/security.md, "myelin's own
// files"): a symbolic link among them, which a cloned repository can plant,
// is never followed. A linked .myelin (or .myelin/logs, .myelin/shell,
// .myelin/tool-results) or a linked store file stops the command before it
// starts; a linked log is skipped with one warning.

// storeFiles are the files SQLite keeps beside the store.
var storeFiles = []string{"", "-wal", "-shm", "-journal"}

// defaultStore is the store's path in the workspace at dir, checked: an
// error names the directory (.myelin) or store file that is a symbolic
// link. A --store
// given on the command line is the user's own choice and is not checked.
func defaultStore(dir string) (string, error) {
	rel := workspace.OwnDir + "/history.db"
	for _, suffix := range storeFiles {
		if err := workspace.CheckOwnFile(dir, rel+suffix); err != nil {
			return "", fmt.Errorf("refusing to use the history store: %w", err)
		}
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

// checkOwnFiles is what a command that starts tools checks first: none of
// the workspace's own directories may be a symbolic link (the error says
// which). Each log under .myelin/logs that is a link gets one warning on
// stderr: it is not followed, and what would go to it is not kept.
func checkOwnFiles(ws *workspace.Workspace, stderr io.Writer) error {
	if err := workspace.CheckOwn(ws.Dir()); err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	logs := filepath.Join(ws.Dir(), workspace.OwnDir, "logs")
	entries, err := os.ReadDir(logs) // checked above: a real directory, or none
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		err := workspace.CheckOwnFile(ws.Dir(), workspace.OwnDir+"/logs/"+e.Name())
		var le *workspace.OwnLinkError
		if errors.As(err, &le) {
			fmt.Fprintf(stderr, "myelin: warning: %s is a symbolic link (to %s); myelin does not follow it, and that log is not kept: remove the link\n", le.Path, le.Target)
		}
	}
	return nil
}

// traceMax caps the trace log; over it, it is rotated to trace.log.1.
const traceMax = 10 << 20

// openTrace opens .myelin/logs/trace.log for appending, where the tool
// calls of scripts are recorded; nil when it cannot be opened safely (a
// link there has had its warning from checkOwnFiles; the calls are still
// in each result's structured content).
func openTrace(ws *workspace.Workspace) *workspace.Log {
	l, err := workspace.OpenLog(ws.Dir(), workspace.OwnDir+"/logs/trace.log", traceMax)
	if err != nil {
		return nil
	}
	return l
}
