package mcpserver

import (
	"context"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/tool"
)

// gated is a tool each call of which says it started (on started, with
// its name) and then waits for its release, or its context's end.
type gated struct {
	mu      sync.Mutex
	events  []string
	started chan string
	release map[string]chan struct{}
	freed   map[string]bool
}

func newGated() *gated {
	return &gated{started: make(chan string, 16), release: map[string]chan struct{}{}, freed: map[string]bool{}}
}

// freeAll frees the calls not freed yet: a test that failed registers it
// (after connecting) so as not to wait for them as it ends.
func (g *gated) freeAll() {
	for n := range g.release {
		if !g.freed[n] {
			g.free(n)
		}
	}
}

type gatedIn struct {
	Name string `json:"name"`
}

// tool is a tool of the name, concurrent or not, whose calls wait.
func (g *gated) tool(name string, concurrent bool) *tool.Tool {
	t := tool.MustFunc(name, "Waits to be released.", func(ctx context.Context, in gatedIn) (any, error) {
		g.mu.Lock()
		g.events = append(g.events, "start "+in.Name)
		ch := g.release[in.Name]
		g.mu.Unlock()
		g.started <- in.Name
		select {
		case <-ch:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.events = append(g.events, "end "+in.Name)
		g.mu.Unlock()
		return in.Name + " done", nil
	})
	t.ReadOnly = concurrent
	return t
}

// expect makes the release of the call named name.
func (g *gated) expect(names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range names {
		g.release[n] = make(chan struct{})
	}
}

func (g *gated) free(name string) {
	g.freed[name] = true
	close(g.release[name])
}

func (g *gated) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.events)
}

// goCall calls tool name with {"name": call} on its own goroutine; the
// result comes on the channel returned.
func goCall(cs *sdk.ClientSession, name, call string) <-chan *sdk.CallToolResult {
	out := make(chan *sdk.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"name": call}})
		if err != nil {
			r = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		out <- r
	}()
	return out
}

// A host's calls of tools that are not Concurrent run alone, one at a
// time in the order they came, and a read that comes after a write waits
// for it: while w1 runs, w2 and then r1 wait; w2 runs once w1 is done,
// and r1 once w2 is.
func TestCallsThatAreNotConcurrentRunAloneInTheOrderTheyCame(t *testing.T) {
	g := newGated()
	g.expect("w1", "w2", "r1")
	s := New(Config{Tools: registry(t, g.tool("test--write", false), g.tool("test--read", true))})
	cs := connect(t, s, nil)
	t.Cleanup(g.freeAll)
	w1 := goCall(cs, "test--write", "w1")
	if n := receive(t, g.started, "w1's start"); n != "w1" {
		t.Fatalf("%s started first, want w1", n)
	}
	w2 := goCall(cs, "test--write", "w2")
	waitFor(t, "w2 waiting for its turn", func() bool { return s.turns.waiting() == 1 })
	r1 := goCall(cs, "test--read", "r1")
	waitFor(t, "r1 waiting for its turn", func() bool { return s.turns.waiting() == 2 })
	g.free("w1")
	receive(t, w1, "w1's result")
	if n := receive(t, g.started, "w2's start"); n != "w2" {
		t.Fatalf("%s started after w1, want w2", n)
	}
	if s.turns.waiting() != 1 {
		t.Fatalf("%d calls wait while w2 runs, want r1 waiting", s.turns.waiting())
	}
	g.free("w2")
	receive(t, w2, "w2's result")
	if n := receive(t, g.started, "r1's start"); n != "r1" {
		t.Fatalf("%s started after w2, want r1", n)
	}
	g.free("r1")
	if r := receive(t, r1, "r1's result"); textOf(r) != "r1 done" {
		t.Errorf("r1 gave %q", textOf(r))
	}
	want := []string{"start w1", "end w1", "start w2", "end w2", "start r1", "end r1"}
	if got := g.log(); !slices.Equal(got, want) {
		t.Errorf("the calls ran as %v, want %v", got, want)
	}
}

// Calls of Concurrent tools run alongside each other: the second starts
// while the first still runs.
func TestConcurrentCallsRunAlongsideEachOther(t *testing.T) {
	g := newGated()
	g.expect("r1", "r2")
	s := New(Config{Tools: registry(t, g.tool("test--read", true))})
	cs := connect(t, s, nil)
	t.Cleanup(g.freeAll)
	r1 := goCall(cs, "test--read", "r1")
	receive(t, g.started, "r1's start")
	r2 := goCall(cs, "test--read", "r2")
	receive(t, g.started, "r2's start, while r1 runs")
	g.free("r1")
	g.free("r2")
	receive(t, r1, "r1's result")
	receive(t, r2, "r2's result")
	if got := g.log(); !slices.Equal(got[:2], []string{"start r1", "start r2"}) {
		t.Errorf("the calls ran as %v, want both started before either ended", got)
	}
}

// A call waiting for its turn that the host cancels leaves the queue:
// the calls behind it go on.
func TestACancelledCallLeavesTheQueue(t *testing.T) {
	var q turns
	if err := q.take(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- q.take(ctx, true) }()
	waitFor(t, "the second call waiting", func() bool { return q.waiting() == 1 })
	cancel()
	if err := receive(t, errc, "the cancelled wait's end"); err == nil {
		t.Fatal("the cancelled call took a turn")
	}
	q.give(true)
	// bounded: were the cancelled call still queued, this take would wait
	// for it for ever instead of failing
	bounded, stop := context.WithTimeout(context.Background(), testWait)
	defer stop()
	if err := q.take(bounded, true); err != nil || q.waiting() != 0 {
		t.Errorf("a call after the cancelled one got %v with %d waiting, want its turn at once", err, q.waiting())
	}
}

// A call of a tool that orders its own calls (Alongside, as the agent
// tool is) takes no turn: a write that comes while it runs runs at once,
// and a read behind that write is not held for the whole of it.
func TestACallThatOrdersItsOwnCallsHoldsNoTurn(t *testing.T) {
	g := newGated()
	g.expect("a1", "w1", "r1")
	agent := g.tool("test--agent", false)
	agent.Alongside = true
	s := New(Config{Tools: registry(t, agent, g.tool("test--write", false), g.tool("test--read", true))})
	cs := connect(t, s, nil)
	t.Cleanup(g.freeAll)
	a1 := goCall(cs, "test--agent", "a1")
	receive(t, g.started, "a1's start")
	w1 := goCall(cs, "test--write", "w1")
	if n := receive(t, g.started, "w1's start while a1 runs"); n != "w1" {
		t.Fatalf("%s started, want w1", n)
	}
	g.free("w1")
	receive(t, w1, "w1's result")
	r1 := goCall(cs, "test--read", "r1")
	if n := receive(t, g.started, "r1's start while a1 runs"); n != "r1" {
		t.Fatalf("%s started, want r1", n)
	}
	g.free("r1")
	receive(t, r1, "r1's result")
	g.free("a1")
	if r := receive(t, a1, "a1's result"); textOf(r) != "a1 done" {
		t.Errorf("a1 gave %q", textOf(r))
	}
}
