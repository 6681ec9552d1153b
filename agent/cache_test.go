package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/tool"
)

// countingStore is a Store that counts the reads of conversation records.
type countingStore struct {
	history.Store
	gets int
}

func (s *countingStore) Get(ctx context.Context, id string) (history.Conversation, error) {
	s.gets++
	return s.Store.Get(ctx, id)
}

func names(defs []provider.Tool) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func nop(name string) *tool.Tool {
	return tool.MustFunc(name, "Does nothing.", func(context.Context, struct{}) (any, error) { return "ok", nil })
}

// The tool definitions are encoded once per change of the registry: a
// request after a tool is added, or after the agent is given another
// registry, sends the tools as they are now.
func TestTheToolDefinitionsFollowEveryChangeOfTheRegistry(t *testing.T) {
	ctx := context.Background()
	other := &tool.Registry{}
	if err := other.Add(nop("other--tool")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(a *Agent)
		want   []string
	}{
		{"nothing changes", func(*Agent) {}, []string{"a--tool"}},
		{"a tool is added", func(a *Agent) { _ = a.Tools.Add(nop("b--tool")) }, []string{"a--tool", "b--tool"}},
		{"a failed add changes nothing", func(a *Agent) { _ = a.Tools.Add(nop("a--tool")) }, []string{"a--tool"}},
		{"another registry", func(a *Agent) { a.Tools = other }, []string{"other--tool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &tool.Registry{}
			if err := reg.Add(nop("a--tool")); err != nil {
				t.Fatal(err)
			}
			a := &Agent{Store: &history.Memory{}, Tools: reg, Model: "m"}
			id, err := a.NewConversation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if req, err := a.Request(ctx, id); err != nil || !slices.Equal(names(req.Tools), []string{"a--tool"}) {
				t.Fatalf("first request: tools %v, %v", names(req.Tools), err)
			}
			tc.change(a)
			req, err := a.Request(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(req.Tools); !slices.Equal(got, tc.want) {
				t.Errorf("after the change the request sends tools %v, want %v", got, tc.want)
			}
			defs, err := a.ToolDefs()
			if err != nil {
				t.Fatal(err)
			}
			if got := names(defs); !slices.Equal(got, tc.want) {
				t.Errorf("ToolDefs = %v, want %v", got, tc.want)
			}
		})
	}
}

// ToolDefs' slice is the caller's: changing it changes no later request.
func TestToolDefsIsTheCallersOwnCopy(t *testing.T) {
	ctx := context.Background()
	reg := &tool.Registry{}
	if err := reg.Add(nop("a--tool")); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Store: &history.Memory{}, Tools: reg, Model: "m"}
	id, _ := a.NewConversation(ctx)
	defs, err := a.ToolDefs()
	if err != nil {
		t.Fatal(err)
	}
	defs[0].Name = "changed"
	req, err := a.Request(ctx, id)
	if err != nil || req.Tools[0].Name != "a--tool" {
		t.Fatalf("a request after the caller changed ToolDefs' slice sends %v (%v)", names(req.Tools), err)
	}
}

// A conversation's record (its system prompt) is read from the store once,
// not for every request: a record never changes once created. Another
// store is read again; an unknown conversation stays unknown.
func TestTheConversationRecordIsReadOncePerStore(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		created  bool // by this agent (NewConversation), else by another
		requests int
		swap     bool // the agent is given another store holding the same conversation
		want     int  // reads of the record
	}{
		{"created by the agent", true, 3, false, 0},
		{"created elsewhere", false, 3, false, 1},
		{"another store", true, 3, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &history.Memory{}
			store := &countingStore{Store: mem}
			a := &Agent{Store: store, Tools: &tool.Registry{}, Model: "m", System: "be brief"}
			id := "c1"
			if tc.created {
				var err error
				if id, err = a.NewConversation(ctx); err != nil {
					t.Fatal(err)
				}
			} else if err := mem.Create(ctx, history.Conversation{ID: id, System: "from elsewhere"}); err != nil {
				t.Fatal(err)
			}
			if tc.swap {
				store = &countingStore{Store: mem}
				a.Store = store
			}
			for range tc.requests {
				req, err := a.Request(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]string{true: "be brief", false: "from elsewhere"}[tc.created]; req.System != want {
					t.Fatalf("system prompt %q, want %q", req.System, want)
				}
			}
			if store.gets != tc.want {
				t.Errorf("%d requests read the record %d times, want %d", tc.requests, store.gets, tc.want)
			}
		})
	}
	a := &Agent{Store: &history.Memory{}, Tools: &tool.Registry{}, Model: "m"}
	for range 2 {
		if _, err := a.Request(ctx, "nowhere"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("a request of an unknown conversation: %v, want ErrNotFound", err)
		}
	}
}

// textProvider answers every request with the text "ok".
type textProvider struct{}

func (textProvider) Complete(ctx context.Context, r provider.Request, _ func(string)) (provider.Response, error) {
	return provider.Response{Message: history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "ok"}}}, StopReason: "end_turn"}, nil
}

// Turns on one agent and on clones of it, each starting with the tool
// definitions not kept (toolDefsAhead's goroutine), while the registry
// changes, all end well (run with -race; from a review).
func TestTurnsEncodingToolDefinitionsAheadWhileTheRegistryChangesEndWell(t *testing.T) {
	ctx := context.Background()
	reg := &tool.Registry{}
	if err := reg.Add(nop("a--tool")); err != nil {
		t.Fatal(err)
	}
	a := &Agent{Provider: textProvider{}, Store: &history.Memory{}, Tools: reg, Model: "claude-sonnet-4-5", ContextWindow: 200000}
	var ids []string
	for range 6 {
		id, err := a.NewConversation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			_ = reg.Add(nop(fmt.Sprintf("x%d--tool", i)))
		}
	})
	for i, id := range ids {
		wg.Go(func() {
			ag := a
			if i%2 == 1 {
				ag = a.Clone()
			}
			for range 5 {
				if _, err := ag.Turn(ctx, id, "hi", nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// systemsProvider answers every request with the text "ok" and notes the
// system prompt each request sent.
type systemsProvider struct {
	mu      sync.Mutex
	systems []string
}

func (p *systemsProvider) Complete(ctx context.Context, r provider.Request, _ func(string)) (provider.Response, error) {
	p.mu.Lock()
	p.systems = append(p.systems, r.System)
	p.mu.Unlock()
	return textProvider{}.Complete(ctx, r, nil)
}

// A long-running agent's next turn on a conversation that another
// process deleted and made again under its id, with another system
// prompt, sends the new prompt: the record is read again at each turn's
// start, not kept for the agent's life (it was: the old prompt was sent).
func TestATurnOnAConversationMadeAgainUnderItsIdSendsItsNewSystemPrompt(t *testing.T) {
	ctx := context.Background()
	mem := &history.Memory{}
	p := &systemsProvider{}
	a := &Agent{Store: mem, Provider: p, Tools: &tool.Registry{}, Model: "m"}
	if err := mem.Create(ctx, history.Conversation{ID: "c", System: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Turn(ctx, "c", "hello", nil); err != nil {
		t.Fatal(err)
	}
	// another process, through the same store, between the turns
	if err := mem.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := mem.Create(ctx, history.Conversation{ID: "c", System: "second"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Turn(ctx, "c", "hello again", nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "second"}; !slices.Equal(p.systems, want) {
		t.Fatalf("the turns sent the system prompts %q, want %q", p.systems, want)
	}
}
