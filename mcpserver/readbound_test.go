package mcpserver

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// heldGate allows every call once the test lets it go, and counts the
// checks waiting at once (a read of a workspace file is checked while
// it runs).
type heldGate struct {
	mu      sync.Mutex
	waiting int
	most    int
	release chan struct{}
}

func (g *heldGate) Check(ctx context.Context, q tool.Question) (tool.Ruling, error) {
	g.mu.Lock()
	g.waiting++
	g.most = max(g.most, g.waiting)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
	case <-ctx.Done():
		return tool.Ruling{}, ctx.Err()
	}
	return tool.Ruling{Record: permission.Record{Decision: permission.Allow.String()}}, nil
}

func (g *heldGate) counts() (waiting, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting, g.most
}

// At most MaxReadsInFlight resources/read run at once, however many a
// host sends: the others wait for a turn, and all are answered.
func TestResourceReadsInFlightAreBounded(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &heldGate{release: make(chan struct{})}
	s := New(Config{Workspace: ws, Gate: g})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	cs := connectHTTP(t, srv, false)
	var once sync.Once
	let := func() { once.Do(func() { close(g.release) }) }
	t.Cleanup(let) // first of the cleanups: a failed test's reads end
	const n = 3 * MaxReadsInFlight
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := read(cs, fileURI(ws.Dir(), "a.txt"))
			errs <- err
		}()
	}
	waitFor(t, "the first reads", func() bool { w, _ := g.counts(); return w == MaxReadsInFlight })
	time.Sleep(100 * time.Millisecond) // the others, were they not held, would be checked by now
	if _, most := g.counts(); most > MaxReadsInFlight {
		t.Fatalf("%d resource reads ran at once, want at most %d", most, MaxReadsInFlight)
	}
	let()
	for i := range n {
		if err := receive(t, errs, "a read's answer"); err != nil {
			t.Errorf("read %d: %v", i, err)
		}
	}
}

// A read gives its turn back once answered: many reads one after
// another, more than there are turns, are all answered, over HTTP and
// over a stream transport.
func TestAReadGivesItsTurnBack(t *testing.T) {
	ws := openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	latestHTTP, err := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting over HTTP at %s: %v", latestVersion, err)
	}
	t.Cleanup(func() { latestHTTP.Close() })
	for name, cs := range map[string]*sdk.ClientSession{"HTTP at " + latestVersion: latestHTTP, "HTTP": connectHTTP(t, srv, false), "in memory": connectAt(t, s, nil, hostVersion), "in memory at " + latestVersion: connect(t, s, nil)} {
		for i := range 5 * MaxReadsInFlight {
			if _, err := read(cs, fileURI(ws.Dir(), "a.txt")); err != nil {
				t.Fatalf("%s: read %d: %v", name, i, err)
			}
		}
	}
	if _, err := read(connectAt(t, s, nil, hostVersion), fileURI(ws.Dir(), "missing.txt")); err == nil {
		t.Fatal("a missing file was read")
	}
	if _, err := read(connectAt(t, s, nil, hostVersion), fileURI(ws.Dir(), "a.txt")); err != nil {
		t.Fatalf("after a refused read, a read: %v", err)
	}
}
