package agent

import (
	"context"
	"encoding/json"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/historytest"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// The mark the agent keeps over a conversation is leastFrom's place, and
// it stays true through every message added after it: a readState made
// from the mark and the messages from it on gives every reader of a
// turn's start and of fit the answer the whole list gives — at the
// moment it was set and after each later message.
func TestAMarkSetOverAConversationHoldsThroughEveryLaterAppend(t *testing.T) {
	marks, used := 0, 0
	for seed := int64(1); seed <= 120; seed++ {
		stored := historytest.Generated(seed)
		a := &Agent{Model: "model-0"}
		now := a.settings(sizing{conv: history.Conversation{System: "system"}, digest: "tools"})
		r := rand.New(rand.NewSource(-seed))
		for i := range stored {
			if stored[i].Settings != nil && r.Intn(2) == 0 {
				stored[i].Settings = &now
			}
		}
		for n := 1; n <= len(stored); n++ {
			whole := wholeState(stored[:n])
			from := markFrom(&whole, window.GatherTail(whole.tail))
			if least, why := leastFrom(stored[:n], false); from != least {
				t.Fatalf("seed %d, %d messages: the mark is at %d; leastFrom says %d (%s)", seed, n, from, least, why)
			}
			if from == 0 {
				continue
			}
			marks++
			facts, err := json.Marshal(whole.factsAt(from))
			if err != nil {
				t.Fatal(err)
			}
			m := markOf(from, facts)
			// from a marked tail, the mark is found again
			if st, _, ok := (&Agent{}).markedState("c", m, stored[from:n]); ok {
				if got := markFrom(&st, window.GatherTail(st.tail)); got != from {
					t.Fatalf("seed %d, %d messages: a tail from the mark at %d puts it at %d", seed, n, from, got)
				}
			}
			for end := n; end <= len(stored); end += 1 + (len(stored)-n)/4 {
				st, _, ok := (&Agent{}).markedState("c", m, stored[from:end])
				if !ok {
					continue // its tail lacks what the check needs: read whole
				}
				used++
				all := wholeState(stored[:end])
				want := startOf(t, &all, now, false)
				if got := startOf(t, &st, now, false); !reflect.DeepEqual(got, want) {
					for i := range got {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("seed %d: a mark set at %d of %d messages, read at %d: reader answer %d is\n%+v\nover the whole list\n%+v", seed, from, n, end, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	if marks < 300 || used < 300 {
		t.Fatalf("%d marks set, %d read back: the generated conversations do not test marks", marks, used)
	}
}

// A mark this agent cannot use — facts of another version, or not JSON,
// or counting more records than places, or a place past what the tail
// holds allows — is not used: the conversation is read whole.
func TestAMarkThisAgentCannotUseIsReadWhole(t *testing.T) {
	var stored []history.Message
	var least int
	for seed := int64(1); least < 4; seed++ {
		stored = historytest.Generated(seed)
		least, _ = leastFrom(stored, false)
	}
	whole := wholeState(stored)
	good, err := json.Marshal(whole.factsAt(least))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := (&Agent{}).markedState("c", markOf(least, good), stored[least:]); !ok {
		t.Fatal("the agent's own mark at leastFrom is not used")
	}
	other := strings.Replace(string(good), `"v":2`, `"v":3`, 1)
	many := strings.Replace(string(good), `"records":`, `"records":1000`, 1)
	end := len(stored)
	// a pack of the seventh session's codec (version 1): its version byte
	// is the first of the pack, after the envelope
	v1 := appendMark(nil, good, packID{4}, least, stored[least:end])
	v1[len(appendMark(nil, good, packID{4}, least, nil))-len(history.AppendPacked(nil, nil))] = 1
	for what, m := range map[string]history.Mark{
		"a pack of another version (1, the seventh session's)": {From: end, Facts: v1},
		"another version":                markOf(least, []byte(other)),
		"facts that are not JSON":        markOf(least, []byte("{")),
		"facts with a field unknown":     markOf(least, []byte(`{"v":2,"records":0,"window":{},"more":1}`)),
		"more records than places":       markOf(least, []byte(many)),
		"a place past what readers need": markOf(end, good),
		"the facts of version 1 (JSON alone, as the sixth session wrote them)": {From: least, Facts: good},
		"its facts cut short":                          {From: least, Facts: markOf(least, good).Facts[:len(good)/2]},
		"no pack id":                                   {From: least, Facts: append([]byte{markVersion, byte(len(good))}, good...)[:len(good)+2]},
		"a pack that does not unpack":                  {From: end, Facts: append(appendMark(nil, good, packID{1}, least, nil), 0xff, 0xff)},
		"a pack of fewer messages than its place says": {From: end, Facts: appendMark(nil, good, packID{2}, least, stored[least:end-1])},
		"a pack whose place is past its mark's From":   {From: least, Facts: appendMark(nil, good, packID{3}, least+1, nil)},
	} {
		if _, _, ok := (&Agent{}).markedState("c", m, stored[m.From:]); ok {
			t.Errorf("a mark with %s is used", what)
		}
		s := &history.Memory{}
		if err := s.Create(context.Background(), history.Conversation{ID: "c"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(context.Background(), "c", stored...); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMark(context.Background(), "c", m); err != nil {
			t.Fatal(err)
		}
		st, _, err := (&Agent{Store: s}).load(context.Background(), "c", false)
		if err != nil || st.tail.From() != 0 || st.end() != len(stored) {
			t.Errorf("a mark with %s: the turn read from %d to %d (%v); want the whole of %d", what, st.tail.From(), st.end(), err, len(stored))
		}
	}
}

// marking is a Store that keeps marks and reads records without
// counting their messages.
type marking interface {
	history.Store
	history.Marker
	history.RecordReader
}

// countingReads is a Store that keeps marks and counts its whole reads
// (Messages, and Get, which counts every message) and its reads from a
// mark past place 0.
type countingReads struct {
	marking
	whole, tails *atomic.Int64
}

func (c countingReads) Get(ctx context.Context, id string) (history.Conversation, error) {
	c.whole.Add(1)
	return c.marking.Get(ctx, id)
}

func (c countingReads) Messages(ctx context.Context, id string) ([]history.Message, error) {
	c.whole.Add(1)
	return c.marking.Messages(ctx, id)
}

func (c countingReads) Marked(ctx context.Context, id string) (history.Mark, []history.Message, error) {
	m, msgs, err := c.marking.Marked(ctx, id)
	if m.From > 0 {
		c.tails.Add(1)
	}
	return m, msgs, err
}

// unmarked is a Store that keeps no marks: every read is whole.
type unmarked struct{ history.Store }

// A summarised conversation resumed by a fresh agent on a store that
// keeps marks — Memory, and SQLite opened afresh for every turn, as a
// restarted process opens it — is read from its mark, never whole, and
// every request it sends is byte for byte the one an agent reading it
// whole sends: the first turn sets the mark, the next ones read from it.
func TestAResumedTurnReadsFromTheMarkAndSendsWhatAWholeReadSends(t *testing.T) {
	stored := summarisedConversation()
	w := testWires["anthropic"]
	run := func(open func() marking, wrap func(marking) history.Store) [][]byte {
		ctx := context.Background()
		s := open()
		if err := s.Create(ctx, history.Conversation{ID: "c", System: "system"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "c", stored...); err != nil {
			t.Fatal(err)
		}
		srv := w.server(t)
		for turn := range 3 {
			p, err := w.provider(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			// a fresh agent, and store handle, a turn: a restart
			a := &Agent{Provider: p, Store: wrap(open()), Tools: &tool.Registry{}, Model: "claude-test", ContextWindow: 1_000_000}
			srv.Push(providertest.Step{Text: "ok", Input: 100, Output: 1})
			if _, err := a.Turn(ctx, "c", "go on "+string(rune('a'+turn)), func(Event) {}); err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
		}
		return srv.Requests()
	}
	stores := map[string]func(t *testing.T) func() marking{
		"memory": func(t *testing.T) func() marking {
			s := &history.Memory{}
			return func() marking { return s }
		},
		"sqlite": func(t *testing.T) func() marking {
			path := filepath.Join(t.TempDir(), "history.db")
			return func() marking {
				s, err := sqlite.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
	}
	for name, opener := range stores {
		t.Run(name, func(t *testing.T) {
			want := run(opener(t), func(s marking) history.Store { return unmarked{s} })
			var whole, tails atomic.Int64
			got := run(opener(t), func(s marking) history.Store { return countingReads{s, &whole, &tails} })
			if len(got) != len(want) {
				t.Fatalf("%d requests sent; reading whole, %d", len(got), len(want))
			}
			for i := range got {
				if string(got[i]) != string(want[i]) {
					t.Fatalf("request %d differs from the one a whole read sends:\n%s\nwant\n%s", i, got[i], want[i])
				}
			}
			if tails.Load() < 2 {
				t.Fatalf("%d reads were from a mark: the first turn did not set one, or the next did not read through it", tails.Load())
			}
			// before the mark was set, Marked gave every message; a fallback
			// to Messages would mean a mark the agent set was not one it
			// could use, and a Get a record read by counting every message
			if n := whole.Load(); n != 0 {
				t.Fatalf("%d whole reads (Messages or Get) with a mark the agent could use", n)
			}
		})
	}
}

// summarisedConversation is the first generated conversation a mark can
// start past its first messages (leastFrom past 4) whose last turn ended
// with an answer.
func summarisedConversation() []history.Message {
	for seed := int64(1); ; seed++ {
		stored := historytest.Generated(seed)
		least, _ := leastFrom(stored, false)
		if last := stored[len(stored)-1]; least > 4 && last.Role == history.Assistant && len(last.ToolCalls()) == 0 {
			return stored
		}
	}
}

// storeConversation makes conversation "c" (system prompt "system") in s,
// holding msgs.
func storeConversation(t *testing.T, s history.Store, msgs []history.Message) {
	t.Helper()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: "c", System: "system"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", msgs...); err != nil {
		t.Fatal(err)
	}
}

// markOf is the mark at from with facts (markFacts, JSON) and no pack, as
// keepMark would set it had it not packed the view.
func markOf(from int, facts []byte) history.Mark {
	return history.Mark{From: from, Facts: appendMark(nil, facts, packID{}, from, nil)}
}
