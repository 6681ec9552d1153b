//go:build unix

package sqlite

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// staleChild names the store a re-run of this test binary appends to, as
// another myelin process writing the same store
// (TestARolledBackSpillDoesNotOverwriteAnotherProcesssCommit).
const staleChild = "MYELIN_HISTORY_STALE_CHILD"

// An Append that fails after writing a message larger than SQLite's page
// cache (SQLite spills pages of it to the log before the commit) is
// rolled back; what it spilled to the log is not a commit's and must
// never reach the file over frames another process commits after.
func TestARolledBackSpillDoesNotOverwriteAnotherProcesssCommit(t *testing.T) {
	if path := os.Getenv(staleChild); path != "" {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Create(ctx, history.Conversation{ID: "b"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "b", userText(strings.Repeat("b", 1<<20))); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	// a large message, then one that cannot be stored: the Append fails
	// and is rolled back
	bad := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "x", Name: "n", Input: json.RawMessage(`{not json`)}}}
	if err := s.Append(ctx, "a", userText(strings.Repeat("a", 5<<19)), bad); err == nil {
		t.Fatal("an Append with a message that is not valid JSON succeeded")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestARolledBackSpillDoesNotOverwriteAnotherProcesssCommit$")
	cmd.Env = append(os.Environ(), staleChild+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	// any read of this process now
	if _, err := s.Messages(ctx, "a"); err != nil {
		t.Logf("reading conversation a: %v", err)
	}
	got, err := s.Messages(ctx, "b")
	if err != nil || len(got) != 1 || len(got[0].Parts[0].Text) != 1<<20 {
		t.Errorf("this process reads the other's commit as %d messages, %v; want its 1 message of %d bytes", len(got), err, 1<<20)
	}
	other := openStore(t, path)
	got, err = other.Messages(ctx, "b")
	if err != nil || len(got) != 1 || len(got[0].Parts[0].Text) != 1<<20 {
		t.Errorf("a new opening reads the other process's commit as %d messages, %v; want its 1 message of %d bytes", len(got), err, 1<<20)
	}
}
