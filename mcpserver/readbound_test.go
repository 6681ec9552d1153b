package mcpserver

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// heldReads holds every read that has its turn until the test lets them
// go, counting those held at once, in all and by session.
type heldReads struct {
	mu        sync.Mutex
	now, most int
	of        map[*sdk.ServerSession]int
	mostOne   int // the most of one session's held at once
	// conversations counts the reads of a conversation that had a turn
	conversations int
	release       chan struct{}
}

func holdReads(s *Server) *heldReads {
	h := &heldReads{of: map[*sdk.ServerSession]int{}, release: make(chan struct{})}
	s.heldRead = func(req *sdk.ReadResourceRequest) {
		h.mu.Lock()
		h.now++
		h.of[req.Session]++
		h.most, h.mostOne = max(h.most, h.now), max(h.mostOne, h.of[req.Session])
		if strings.HasPrefix(req.Params.URI, "myelin://conversations/") {
			h.conversations++
		}
		h.mu.Unlock()
		<-h.release
		h.mu.Lock()
		h.now--
		h.of[req.Session]--
		h.mu.Unlock()
	}
	return h
}

// heldServer is a server of c over HTTP on a workspace holding a.txt,
// its reads held once they have their turns (holdReads) until the test
// lets them go: let, also the first of the test's cleanups, so that a
// failed test's reads end.
func heldServer(t *testing.T, c Config) (s *Server, ws *workspace.Workspace, srv *httptest.Server, h *heldReads, let func()) {
	t.Helper()
	ws = openWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Workspace = ws
	s = New(c)
	h = holdReads(s)
	srv = httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	var once sync.Once
	let = func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(let)
	return s, ws, srv, h, let
}

func (h *heldReads) counts() (now, most, mostOne int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now, h.most, h.mostOne
}

// At most MaxReadsInFlight resources/read run at once, however many the
// hosts send, and at most MaxReadsPerSession of one session's: the others
// wait for a turn, and all are answered.
func TestResourceReadsInFlightAreBounded(t *testing.T) {
	_, ws, srv, h, let := heldServer(t, Config{})
	const hosts, each = 3, 2 * MaxReadsPerSession
	errs := make(chan error, hosts*each)
	for range hosts {
		cs := connectHTTP(t, srv, false)
		for range each {
			go func() {
				_, err := read(cs, fileURI(ws.Dir(), "a.txt"))
				errs <- err
			}()
		}
	}
	waitFor(t, "the first reads", func() bool { now, _, _ := h.counts(); return now == MaxReadsInFlight })
	time.Sleep(100 * time.Millisecond) // the others, were they not held, would have their turns by now
	if _, most, mostOne := h.counts(); most > MaxReadsInFlight || mostOne > MaxReadsPerSession {
		t.Fatalf("%d resource reads ran at once, %d of one session's; want at most %d and %d", most, mostOne, MaxReadsInFlight, MaxReadsPerSession)
	}
	let()
	for i := range hosts * each {
		if err := receive(t, errs, "a read's answer"); err != nil {
			t.Errorf("read %d: %v", i, err)
		}
	}
}

// One host's reads, however many wait, hold at most MaxReadsPerSession
// turns: another host's read has its turn at once (a host that read none
// of its answers held every turn, and another's read queued behind all
// of them).
func TestOneHostsReadsDoNotHoldAnothersRead(t *testing.T) {
	_, ws, srv, h, let := heldServer(t, Config{})
	hog := connectHTTP(t, srv, false)
	for range 4 * MaxReadsInFlight {
		go read(hog, fileURI(ws.Dir(), "a.txt"))
	}
	waitFor(t, "the hog's reads", func() bool { now, _, _ := h.counts(); return now == MaxReadsPerSession })
	other := connectHTTP(t, srv, false)
	done := make(chan error, 1)
	go func() { _, err := read(other, fileURI(ws.Dir(), "a.txt")); done <- err }()
	waitFor(t, "another host's read to have its turn", func() bool { now, _, _ := h.counts(); return now == MaxReadsPerSession+1 })
	let()
	if err := receive(t, done, "the other host's read"); err != nil {
		t.Fatal(err)
	}
}

// askingGate holds every check of a read of asked (a question to the
// host's user, standing until answered), counting them, and allows the
// others at once.
type askingGate struct {
	asked   string
	waiting atomic.Int32
	release chan struct{}
}

func (g *askingGate) Check(ctx context.Context, q tool.Question) (tool.Ruling, error) {
	if strings.Contains(string(q.Call.Input), g.asked) {
		g.waiting.Add(1)
		defer g.waiting.Add(-1)
		select {
		case <-g.release:
		case <-ctx.Done():
			return tool.Ruling{}, ctx.Err()
		}
	}
	return tool.Ruling{Record: permission.Record{Decision: permission.Allow.String()}}, nil
}

// A read takes its turn after its permission check: reads waiting on a
// question to the host's user hold no turn, and another's read of a file
// the policy allows runs meanwhile (four questions standing held every
// turn).
func TestReadsWaitingOnAQuestionDoNotHoldOthersReads(t *testing.T) {
	ws := openWorkspace(t)
	for _, f := range []string{"a.txt", "secret.txt"} {
		if err := os.WriteFile(filepath.Join(ws.Dir(), f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := &askingGate{asked: "secret.txt", release: make(chan struct{})}
	s := New(Config{Workspace: ws, Gate: g})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	defer close(g.release) // before the cleanups: the questions are answered
	for range MaxReadsInFlight {
		asking := connectHTTP(t, srv, false)
		go asking.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: fileURI(ws.Dir(), "secret.txt")}) // the question stands
	}
	waitFor(t, "the questions", func() bool { return g.waiting.Load() == MaxReadsInFlight })
	other := connectHTTP(t, srv, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := other.ReadResource(ctx, &sdk.ReadResourceParams{URI: fileURI(ws.Dir(), "a.txt")}); err != nil {
		t.Errorf("another host's read of a file the policy allows, while %d questions stand: %v", MaxReadsInFlight, err)
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

// A read its host cancels once it has its turn keeps the turn until its
// handler returns (the SDK writes its answer all the same): cancelling
// each read once it has its turn runs no more than the bound at once
// (the review ran 12 of one session's so).
func TestACancelledReadKeepsItsTurnUntilItsHandlerReturns(t *testing.T) {
	_, ws, srv, h, _ := heldServer(t, Config{})
	cs := connectHTTP(t, srv, false)
	for i := range 3 * MaxReadsInFlight {
		ctx, cancel := context.WithCancel(context.Background())
		go cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: fileURI(ws.Dir(), "a.txt")})
		deadline := time.Now().Add(200 * time.Millisecond)
		for now, _, _ := h.counts(); now < i+1 && time.Now().Before(deadline); now, _, _ = h.counts() {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}
	if _, most, mostOne := h.counts(); most > MaxReadsInFlight || mostOne > MaxReadsPerSession {
		t.Errorf("%d read handlers ran at once (%d of one session's), want at most %d (%d)", most, mostOne, MaxReadsInFlight, MaxReadsPerSession)
	}
}

// Every turn and every session's entry is given back once its reads end:
// those answered, those whose wait ended, those of a session closed with
// reads held; and a conversation's read takes a turn as a file's does.
func TestTurnsAndEntriesAreGivenBack(t *testing.T) {
	st := &history.Memory{}
	if err := st.Create(context.Background(), history.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	s, ws, srv, h, let := heldServer(t, Config{Store: st})
	var sessions []*sdk.ClientSession
	for range 3 {
		cs := connectHTTP(t, srv, false)
		sessions = append(sessions, cs)
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			t.Cleanup(cancel)
			go cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: fileURI(ws.Dir(), "a.txt")})
		}
	}
	waitFor(t, "the first reads", func() bool { now, _, _ := h.counts(); return now == MaxReadsInFlight })
	time.Sleep(400 * time.Millisecond) // the waits end
	sessions[0].Close()                // a session ends with reads held
	let()
	waitFor(t, "every turn and entry given back", func() bool {
		s.reads.mu.Lock()
		defer s.reads.mu.Unlock()
		return len(s.reads.of) == 0 && len(s.reads.all) == 0
	})
	if _, err := read(sessions[1], "myelin://conversations/c1"); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	conv := h.conversations
	h.mu.Unlock()
	if conv != 1 {
		t.Errorf("%d reads of the conversation had a turn, want its one", conv)
	}
}
