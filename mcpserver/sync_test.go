package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/result"
)

// Two syncs of the resource list at once — two calls that end together
// — cannot lose a file: the one that listed before a call spilled does
// not apply its older list after the one that listed the spill file,
// removing the file from the list. A sync lists and changes the list
// while no other does.
func TestTwoResourceSyncsAtOnceKeepAFileSpilledBetweenThem(t *testing.T) {
	ws := openWorkspace(t)
	s := New(Config{Workspace: ws, Env: result.Env{Store: ws}})
	aListed, releaseA := make(chan struct{}), make(chan struct{})
	bListed, bWaiting := make(chan struct{}), make(chan struct{})
	syncs := 0
	s.res.hook = func(step string) {
		// the hook runs on the sync goroutines; syncs counts the "listed"
		// steps: A's is the first, B's the second
		switch step {
		case "listed":
			syncs++
			if syncs == 1 {
				close(aListed)
				<-releaseA
			} else {
				close(bListed)
			}
		case "waiting":
			if syncs == 1 { // B's: A's came before any listing
				close(bWaiting)
			}
		}
	}
	aDone, bDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(aDone); s.syncResources(context.Background()) }()
	receive(t, aListed, "the first sync's listing")
	// a call spills while the first sync has listed, before it applies
	dir := filepath.Join(ws.Dir(), ".myelin", "tool-results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "call_1.txt"), []byte("spilled"), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() { defer close(bDone); s.syncResources(context.Background()) }()
	// the second sync either lists and applies now (then the first
	// applies its older list after it), or waits for the first
	select {
	case <-bListed:
		receive(t, bDone, "the second sync's end")
	case <-bWaiting:
	}
	close(releaseA)
	receive(t, aDone, "the first sync's end")
	receive(t, bDone, "the second sync's end")
	cs := connectAt(t, s, nil, hostVersion)
	if got, want := resourceURIs(t, cs), fileURI(ws.Dir(), ".myelin/tool-results/call_1.txt"); !slices.Contains(got, want) {
		t.Errorf("the resources are %v, want the spilled %s listed", got, want)
	}
}
