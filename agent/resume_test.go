package agent

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// resumeTools is a registry of one read-only tool that answers "ok".
func resumeTools(t testing.TB, names ...string) *tool.Registry {
	type in struct {
		N int `json:"n"`
	}
	reg := &tool.Registry{}
	for _, name := range names {
		echo := tool.MustFunc(name, "Says ok.", func(ctx context.Context, _ in) (any, error) { return "ok", nil })
		echo.ReadOnly = true
		if err := reg.Add(echo); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// anthropicWire is a fresh Anthropic wire on srv: it keeps nothing yet,
// as a restarted process's.
func anthropicWire(t testing.TB, srv *providertest.Server) *anthropic.Provider {
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runTurns runs turns of conversation id on a, each of two tool rounds
// and an answer, calls numbered from first.
func runTurns(t *testing.T, a *Agent, srv *providertest.Server, id string, turns, first int) {
	t.Helper()
	for turn := range turns {
		for r := range 2 {
			n := first + turn*10 + r
			srv.Push(providertest.Step{Text: fmt.Sprintf("reading %d", n), ToolCalls: []providertest.ToolCall{{ID: fmt.Sprintf("toolu_%d", n), Name: "echo--ok", Input: `{"n":1}`}}})
		}
		srv.Push(providertest.Step{Text: "done"})
		if _, err := a.Turn(context.Background(), id, fmt.Sprintf("turn %d", first+turn), nil); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}
}

// storedConversation is a conversation of two turns run by an agent on
// the Anthropic wire and a SQLite store at path, the store closed after
// (the process ended).
func storedConversation(t *testing.T, srv *providertest.Server) (path, id string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "h.db")
	store, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a := &Agent{Provider: anthropicWire(t, srv), Store: store, Tools: resumeTools(t, "echo--ok"), Model: "m"}
	if id, err = a.NewConversation(context.Background()); err != nil {
		t.Fatal(err)
	}
	runTurns(t, a, srv, id, 2, 0)
	if _, err := store.ResumeOf(context.Background(), id); err != nil {
		t.Fatalf("after two turns the store keeps no resume point: %v", err)
	}
	return path, id
}

// resumeAndBuild is a restarted agent's first request of conversation id
// (its new prompt stored first, as a turn does): whether the wire took
// the stored resume point, the body the restarted wire builds, and the
// body a wire that keeps nothing encodes whole for the same request.
func resumeAndBuild(t *testing.T, a *Agent, srv *providertest.Server, id string) (took bool, resumed, fresh []byte) {
	t.Helper()
	ctx := context.Background()
	stored, err := a.Store.Messages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	took = a.resumePrefix(a.prefetchResume(ctx, id), stored)
	if err := a.Store.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and now?"}}}); err != nil {
		t.Fatal(err)
	}
	req, err := a.Request(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if resumed, err = a.Provider.(*anthropic.Provider).Body(req); err != nil {
		t.Fatal(err)
	}
	if fresh, err = anthropicWire(t, srv).Body(req); err != nil {
		t.Fatal(err)
	}
	return took, resumed, fresh
}

func TestResumedBodyIsTheFreshBuildByteForByte(t *testing.T) {
	srv := providertest.NewAnthropic(t)
	path, id := storedConversation(t, srv)
	store, err := sqlite.Open(path) // a new process: a new store handle and wire
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	wire := anthropicWire(t, srv)
	a := &Agent{Provider: wire, Store: store, Tools: resumeTools(t, "echo--ok"), Model: "m"}
	took, resumed, fresh := resumeAndBuild(t, a, srv, id)
	if !took {
		t.Fatal("the restarted wire did not take the resume point of an unchanged conversation")
	}
	if !bytes.Equal(resumed, fresh) {
		t.Fatalf("the body built on the resume point differs from the one encoded whole:\n resumed %s\n fresh   %s", resumed, fresh)
	}
	pt, _ := store.ResumeOf(context.Background(), id)
	if len(pt.Bytes) == 0 || !bytes.HasPrefix(resumed, pt.Bytes) {
		t.Fatalf("the resume point (%d bytes) is not the start of the body (%d bytes) it should stand for", len(pt.Bytes), len(resumed))
	}
}

// bodied is a wire that says the body it sends for a request.
type bodied interface {
	provider.Provider
	Body(provider.Request) ([]byte, error)
}

// TestResumedTurnSendsWhatARunningAgentWould runs, on every wire with a
// resume point (provider.Resumable), the turn after a restart end to end:
// the body that reaches the provider is the one a wire that kept nothing
// encodes for the same request, and the turn keeps a newer point, which
// the next restart takes. A wire without resume points is left out: its
// first request after a restart is encoded whole, as it always was.
func TestResumedTurnSendsWhatARunningAgentWould(t *testing.T) {
	for _, name := range wires() {
		tw := testWires[name]
		probe, err := tw.provider("http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := probe.(provider.Resumable); !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv := tw.server(t)
			wire := func() bodied {
				p, err := tw.provider(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				return p.(bodied)
			}
			path := filepath.Join(t.TempDir(), "h.db")
			var id string
			for restart := range 3 {
				store, err := sqlite.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				a := &Agent{Provider: wire(), Store: store, Tools: resumeTools(t, "echo--ok"), Model: tw.model}
				if restart == 0 {
					if id, err = a.NewConversation(ctx); err != nil {
						t.Fatal(err)
					}
					runTurns(t, a, srv, id, 2, 0)
					store.Close()
					continue
				}
				before, err := store.ResumeOf(ctx, id)
				if err != nil {
					t.Fatalf("restart %d: no resume point kept: %v", restart, err)
				}
				stored, err := store.Messages(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := resumable(before, stored); !ok {
					t.Fatalf("restart %d: the point kept does not hold for the conversation as stored", restart)
				}
				srv.Forget()
				runTurns(t, a, srv, id, 1, restart*100)
				if stored, err = store.Messages(ctx, id); err != nil {
					t.Fatal(err)
				}
				// the turn's first request: its prompt is the last user
				// message before its first answer
				place := -1
				for i := len(stored) - 1; i >= 0 && place < 0; i-- {
					if m := stored[i]; m.Role == history.User && !m.HoldsResults() {
						place = i + 1
					}
				}
				sz, err := a.sizing(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				fresh, err := wire().Body(a.request(sz, window.Gather(stored[:place])))
				if err != nil {
					t.Fatal(err)
				}
				if sent := srv.Requests(); len(sent) == 0 || !bytes.Equal(sent[0], fresh) {
					t.Fatalf("restart %d: the first request sent after the restart is not the body encoded whole for it", restart)
				}
				if after, err := store.ResumeOf(ctx, id); err != nil || after.Rows <= before.Rows || after.Messages <= before.Messages {
					t.Fatalf("restart %d: the turn kept no newer resume point (rows %d, then %d; err %v)", restart, before.Rows, after.Rows, err)
				}
				store.Close()
			}
		})
	}
}

// editingStore is a Store that reads one message other than it was
// stored: as if another writer had changed it behind the agent's back.
type editingStore struct {
	*sqlite.Store
	msg int
}

func (s editingStore) Messages(ctx context.Context, id string) ([]history.Message, error) {
	msgs, err := s.Store.Messages(ctx, id)
	if err != nil || s.msg >= len(msgs) {
		return msgs, err
	}
	out := append([]history.Message(nil), msgs...)
	m := out[s.msg]
	m.Parts = append([]history.Part(nil), m.Parts...)
	m.Parts[0].Text += " (edited)"
	out[s.msg] = m
	return out, nil
}

// TestResumePointRefusedWhenTheConversationChanged changes the stored
// conversation, or the point, behind the agent's back between two
// processes: the point is refused where it does not hold, and whatever
// the case the body is the one encoded whole.
func TestResumePointRefusedWhenTheConversationChanged(t *testing.T) {
	ctx := context.Background()
	point := func(t *testing.T, s *sqlite.Store, id string) history.ResumePoint {
		pt, err := s.ResumeOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return pt
	}
	cases := []struct {
		name string
		// change changes the store (reopened) between the two processes
		change func(t *testing.T, s *sqlite.Store, path, id string) history.Store
		tools  []string
		model  string
		take   bool // the wire takes the point
	}{
		{name: "unchanged", take: true},
		{name: "other tools (and so another request head)", tools: []string{"echo--ok", "other--tool"}, take: true},
		{name: "another model", model: "other-model", take: true},
		{name: "rewound, its branch deleted", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			branch, err := s.Rewind(ctx, id, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, branch.ID); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "rewound before the point", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			if _, err := s.Rewind(ctx, id, 3); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "rewound and grown past the point again", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			n := point(t, s, id).Rows
			if _, err := s.Rewind(ctx, id, 3); err != nil {
				t.Fatal(err)
			}
			for i := 3; i < n+2; i++ {
				if err := s.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("other %d", i)}}},
					history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "other"}}}); err != nil {
					t.Fatal(err)
				}
			}
			return s
		}},
		{name: "switched back to the branch it was made on", take: true, change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			branch, err := s.Rewind(ctx, id, 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "elsewhere"}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Switch(ctx, id, branch.ID); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a store without resume points (as Postgres)", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			return struct{ history.Store }{s} // history.Resumes hidden: the slow path
		}},
		{name: "a message edited by another writer", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			return editingStore{Store: s, msg: 1}
		}},
		{name: "a point of another wire", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			pt := point(t, s, id)
			pt.Wire = "openai messages/1; " + provider.BuildIdentity()
			if err := s.KeepResume(ctx, id, pt); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a point of another build", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			pt := point(t, s, id)
			pt.Wire += " (another)"
			if err := s.KeepResume(ctx, id, pt); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a point whose last group another encoder wrote", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			pt := point(t, s, id)
			pt.Bytes = bytes.Replace(pt.Bytes, []byte(`"type":"text"`), []byte(`"type": "text"`), -1)
			if err := s.KeepResume(ctx, id, pt); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a point of fewer messages than it says", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			pt := point(t, s, id)
			pt.Messages--
			if err := s.KeepResume(ctx, id, pt); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "a point whose bytes were damaged", change: func(t *testing.T, s *sqlite.Store, path, id string) history.Store {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE resume_chunks SET bytes = CAST(replace(CAST(bytes AS TEXT), 'done', 'DONE') AS BLOB) WHERE conversation = ?`, id); err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t)
			path, id := storedConversation(t, srv)
			store, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			var hs history.Store = store
			if tc.change != nil {
				hs = tc.change(t, store, path, id)
			}
			tools := tc.tools
			if tools == nil {
				tools = []string{"echo--ok"}
			}
			model := tc.model
			if model == "" {
				model = "m"
			}
			a := &Agent{Provider: anthropicWire(t, srv), Store: hs, Tools: resumeTools(t, tools...), Model: model}
			took, resumed, fresh := resumeAndBuild(t, a, srv, id)
			if took != tc.take {
				t.Errorf("the wire took the point: %v, want %v", took, tc.take)
			}
			if !bytes.Equal(resumed, fresh) {
				t.Fatalf("the body after the restart differs from the one encoded whole:\n resumed %s\n fresh   %s", resumed, fresh)
			}
		})
	}
}
