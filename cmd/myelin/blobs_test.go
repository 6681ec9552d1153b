package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The default store is a SQLite file inside the workspace, not shared: a
// spill file stays in the workspace alone and the store does not keep a
// second copy of its bytes (history.Blobs, Shared).
func TestTheDefaultStoreKeepsNoCopyOfASpillFile(t *testing.T) {
	dir := t.TempDir()
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "shell--run", Input: `{"command":"seq 1 20000"}`}}},
		providertest.Step{Text: "done"})
	_, errOut, code := cli(t, "run", "--allow-shell", "--allow", "seq *", "--workspace", dir, "count")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	list, err := store.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("conversations %v, %v", list, err)
	}
	msgs, err := store.Messages(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	spill := ""
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.SpillPath != "" {
				spill = p.SpillPath
			}
		}
	}
	if st, err := os.Stat(filepath.Join(dir, spill)); spill == "" || err != nil || st.Size() == 0 {
		t.Fatalf("the output was not spilled to a workspace file: %q, %v", spill, err)
	}
	if store.Shared() {
		t.Fatal("the default store says it is shared")
	}
	if _, data, err := store.BlobAt(ctx, list[0].ID, spill); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("the default store keeps %d bytes of %s (%v); want none", len(data), spill, err)
	}
	if !strings.HasPrefix(spill, ".myelin/tool-results/") {
		t.Fatalf("spill path %q", spill)
	}
}
