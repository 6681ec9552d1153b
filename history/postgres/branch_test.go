package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// forest is what a run of forks, appends, rewinds and switches must
// leave: each conversation's messages, by their texts (every message
// appended has a text of its own, so two conversations hold the same text
// at a place only where they share the message).
type forest struct {
	t        *testing.T
	ctx      context.Context
	s        *postgres.Store // the one every write goes through
	reader   *postgres.Store // another process, reading after every step: its memory must follow
	open     func() *postgres.Store
	want     map[string][]string
	branches map[string][]string
	n        int
}

func (f *forest) append(id string, n int) {
	f.t.Helper()
	for range n {
		f.n++
		text := fmt.Sprintf("m%d of %s", f.n, id)
		if err := f.s.Append(f.ctx, id, storetest.UserText(text)); err != nil {
			f.t.Fatalf("appending to %s: %v", id, err)
		}
		f.want[id] = append(slices.Clip(f.want[id]), text)
	}
}

// create makes conversation id holding n messages.
func (f *forest) create(id string, n int) {
	f.t.Helper()
	if err := f.s.Create(f.ctx, history.Conversation{ID: id}); err != nil {
		f.t.Fatal(err)
	}
	f.want[id] = nil
	f.append(id, n)
}

func (f *forest) fork(id, base string, at int) {
	f.t.Helper()
	if _, err := f.s.Fork(f.ctx, history.Conversation{ID: id, Base: base, BaseAt: at}); err != nil {
		f.t.Fatalf("forking %s at %d into %s: %v", base, at, id, err)
	}
	f.want[id] = slices.Clone(f.want[base][:at])
}

func (f *forest) rewind(id string, at int) string {
	f.t.Helper()
	b, err := f.s.Rewind(f.ctx, id, at)
	if err != nil {
		f.t.Fatalf("rewinding %s to %d: %v", id, at, err)
	}
	if b.BranchOf != id || b.Messages != len(f.want[id]) {
		f.t.Fatalf("Rewind(%s, %d) = %+v; want a branch of %s holding %d messages", id, at, b, id, len(f.want[id]))
	}
	f.want[b.ID] = f.want[id]
	f.want[id] = slices.Clone(f.want[id][:at])
	f.branches[id] = append(f.branches[id], b.ID)
	return b.ID
}

func (f *forest) switchTo(id, branch string) {
	f.t.Helper()
	if err := f.s.Switch(f.ctx, id, branch); err != nil {
		f.t.Fatalf("switching %s to %s: %v", id, branch, err)
	}
	f.want[id], f.want[branch] = f.want[branch], f.want[id]
}

// check reads every conversation in the writing opening, the reading one
// and a new one, and their records, against what they must hold.
func (f *forest) check(step string) {
	f.t.Helper()
	f.checkIn(step, map[string]*postgres.Store{"the writer": f.s, "a reader": f.reader, "a new opening": f.open()})
}

// checkIn is check in the openings given.
func (f *forest) checkIn(step string, openings map[string]*postgres.Store) {
	f.t.Helper()
	for name, st := range openings {
		for id, want := range f.want {
			msgs, err := st.Messages(f.ctx, id)
			if err != nil {
				f.t.Fatalf("after %s, %s: Messages(%s): %v", step, name, id, err)
			}
			if got := storetest.Texts(msgs); !slices.Equal(got, want) {
				f.t.Fatalf("after %s, %s: %s reads %q; want %q", step, name, id, got, want)
			}
			c, err := st.Get(f.ctx, id)
			if err != nil || c.Messages != len(want) {
				f.t.Fatalf("after %s, %s: Get(%s) = %+v, %v; want %d messages", step, name, id, c, err, len(want))
			}
			if c.Base != "" {
				base, err := st.Messages(f.ctx, c.Base)
				if err != nil || len(base) < c.BaseAt || !slices.Equal(storetest.Texts(base[:c.BaseAt]), want[:c.BaseAt]) {
					f.t.Fatalf("after %s, %s: %s names its first %d messages as %s's, which reads %q (%v)", step, name, id, c.BaseAt, c.Base, storetest.Texts(base), err)
				}
			}
		}
	}
}

func newForest(t *testing.T) *forest {
	open, _ := opener(t, nil)
	return &forest{t: t, ctx: context.Background(), s: open(), reader: open(), open: open, want: map[string][]string{}, branches: map[string][]string{}}
}

// Forks, appends, rewinds and switches in any order leave every
// conversation reading what it held, in every opening — one that read
// each conversation before each step (and keeps what it read) too.
func TestForksRewindsAndSwitchesInAnyOrderKeepEveryConversation(t *testing.T) {
	f := newForest(t)
	f.create("root", 6)
	rng := rand.New(rand.NewPCG(30, 5))
	for step := range 100 {
		ids := make([]string, 0, len(f.want))
		for id := range f.want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		id := ids[rng.IntN(len(ids))]
		n := len(f.want[id])
		var what string
		switch op := rng.IntN(10); {
		case op < 3:
			f.append(id, 1+rng.IntN(3))
			what = "append to " + id
		case op < 5:
			at := rng.IntN(n + 1)
			fid := fmt.Sprintf("f%d", step)
			f.fork(fid, id, at)
			what = fmt.Sprintf("fork of %s at %d", id, at)
		case op < 8 && n > 0:
			at := rng.IntN(n)
			b := f.rewind(id, at)
			what = fmt.Sprintf("rewind of %s to %d (branch %s)", id, at, b)
		case len(f.branches[id]) > 0:
			b := f.branches[id][rng.IntN(len(f.branches[id]))]
			f.switchTo(id, b)
			what = fmt.Sprintf("switch of %s to %s", id, b)
		default:
			continue
		}
		after := fmt.Sprintf("step %d (%s)", step, what)
		if rng.IntN(8) == 0 {
			f.check(after) // a new opening too, now and then: each holds a pool
		} else {
			f.checkIn(after, map[string]*postgres.Store{"the writer": f.s, "a reader": f.reader})
		}
	}
	f.check("the last step")
}

// A rewind of a fork to before its own messages, then a switch back and
// forth, where the branch's messages are its base's: each reads what it
// held, and a switch back restores the first.
func TestARewindInsideWhatAForkSharesSwitchesBackAndForth(t *testing.T) {
	f := newForest(t)
	f.create("b", 5)
	f.fork("f", "b", 4)
	f.append("f", 2)
	f.fork("g", "f", 5) // shares one of f's own
	br := f.rewind("f", 2)
	f.check("the rewind of f to 2, inside what it shares with b")
	f.append("f", 3)
	f.switchTo("f", br)
	f.check("the switch to the branch")
	f.switchTo("f", br)
	f.check("the switch back")
	// a rewind of the base under both
	b2 := f.rewind("b", 1)
	f.append("b", 1)
	f.check("a rewind of the base")
	f.switchTo("b", b2)
	f.check("the base switched to its branch")
}

// A branch whose first messages go through another branch of the same
// conversation (a rewind after a rewind) switches in and out.
func TestASwitchToABranchReadThroughAnotherBranchKeepsBoth(t *testing.T) {
	f := newForest(t)
	f.create("x", 6)
	first := f.rewind("x", 4) // first: x's 1-4, then 5-6
	f.append("x", 1)
	second := f.rewind("x", 2) // second holds x's 3-4 and 7; first now reads through it
	f.check("two rewinds")
	f.append("x", 2)
	f.switchTo("x", first)
	f.check("the switch to the first branch")
	f.switchTo("x", second)
	f.check("the switch to the second branch")
	f.switchTo("x", second)
	f.switchTo("x", first)
	f.check("back")
	branches, err := f.s.Branches(f.ctx, "x")
	if err != nil || len(branches) != 2 || branches[0].ID != first || branches[1].ID != second {
		t.Fatalf("Branches(x) = %+v, %v; want %s then %s", branches, err, first, second)
	}
	list, err := f.s.List(f.ctx)
	if err != nil || len(list) != 1 || list[0].ID != "x" {
		t.Fatalf("List = %+v, %v; want x alone, its branches left out", list, err)
	}
}

// Deleting a conversation deletes its branches, and is refused, naming
// them, while other conversations share its messages or a branch's.
func TestDeletingAConversationTakesItsBranchesButNotWhileForksShare(t *testing.T) {
	f := newForest(t)
	f.create("x", 4)
	br := f.rewind("x", 2)
	f.fork("of-branch", br, 3)
	f.fork("of-x", "x", 1)
	err := f.s.Delete(f.ctx, "x")
	if !errors.Is(err, history.ErrHasForks) || !strings.Contains(err.Error(), "of-branch") || !strings.Contains(err.Error(), "of-x") {
		t.Fatalf("Delete(x) with forks of it and of its branch: %v; want ErrHasForks naming both", err)
	}
	f.check("the refused delete")
	for _, id := range []string{"of-branch", "of-x"} {
		if err := f.s.Delete(f.ctx, id); err != nil {
			t.Fatalf("Delete(%s): %v", id, err)
		}
	}
	if err := f.s.Delete(f.ctx, "x"); err != nil {
		t.Fatalf("Delete(x) once its forks are gone: %v", err)
	}
	for _, id := range []string{"x", br} {
		if _, err := f.open().Get(f.ctx, id); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("after Delete(x), Get(%s) = %v; want ErrNotFound", id, err)
		}
		if _, err := f.reader.Messages(f.ctx, id); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("after Delete(x), a reader's Messages(%s) = %v; want ErrNotFound", id, err)
		}
	}
}

// Forks of a conversation made while it is rewound, again and again, at
// once — forks of it, and forks of a fork of it at a point the fork shares
// (made of the conversation further up) — each read the messages their
// base held when they were made: never messages a rewind moved away
// under them.
func TestForkingWhileTheBaseIsRewoundNeverNamesMovedMessages(t *testing.T) {
	f := newForest(t)
	f.create("x", 8)
	base := slices.Clone(f.want["x"])
	f.fork("mid", "x", 8)
	forker := f.open()
	var wg sync.WaitGroup
	wg.Add(1)
	errs := make(chan error, 1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			// forks of x at 8: made before a rewind, they read x's 8;
			// after one, they are refused (x holds fewer)
			_, err := forker.Fork(f.ctx, history.Conversation{ID: fmt.Sprintf("f%d", i), Base: "x", BaseAt: 8})
			if err != nil && !strings.Contains(err.Error(), "holds") {
				errs <- err
				return
			}
			// forks of mid at 4, which it shares with x: always made
			if _, err := forker.Fork(f.ctx, history.Conversation{ID: fmt.Sprintf("g%d", i), Base: "mid", BaseAt: 4}); err != nil {
				errs <- err
				return
			}
		}
	}()
	for at := 7; at >= 1; at-- {
		if _, err := f.s.Rewind(f.ctx, "x", at); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("forking while the base is rewound: %v", err)
	}
	for i := range 20 {
		for id, want := range map[string][]string{fmt.Sprintf("f%d", i): base, fmt.Sprintf("g%d", i): base[:4]} {
			msgs, err := f.open().Messages(f.ctx, id)
			if errors.Is(err, history.ErrNotFound) && id[0] == 'f' {
				continue
			}
			if err != nil || !slices.Equal(storetest.Texts(msgs), want) {
				t.Fatalf("fork %s: %q, %v; want %q", id, storetest.Texts(msgs), err, want)
			}
		}
	}
}

// A switch exchanges the results kept for each side's unfinished round,
// a result of the same call on both sides included: each goes with the
// messages it follows.
func TestASwitchExchangesTheKeptResults(t *testing.T) {
	f := newForest(t)
	f.create("x", 3)
	result := func(text string) history.Part {
		return history.Part{Type: history.ToolResultPart, CallID: "toolu_1", Text: text}
	}
	if err := f.s.Keep(f.ctx, "x", result("before the rewind")); err != nil {
		t.Fatal(err)
	}
	br := f.rewind("x", 1)
	f.append("x", 1)
	if err := f.s.Keep(f.ctx, "x", result("after the rewind"), history.Part{Type: history.ToolResultPart, CallID: "toolu_2", Text: "x's only"}); err != nil {
		t.Fatal(err)
	}
	f.switchTo("x", br)
	f.check("the switch")
	for id, want := range map[string][]string{"x": {"before the rewind"}, br: {"after the rewind", "x's only"}} {
		kept, err := f.open().Kept(f.ctx, id)
		var got []string
		for _, p := range kept {
			got = append(got, p.Text)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("after the switch, Kept(%s) = %q, %v; want %q", id, got, err, want)
		}
	}
}

// A fork stores no message: the tables grow by the fork's own messages
// only, whatever the length of its base (measured in rows and bytes).
func TestAForkStoresOnlyItsOwnMessages(t *testing.T) {
	f := newForest(t)
	f.create("x", 200)
	rows, bytes, err := postgres.MessageRows(f.s)
	if err != nil {
		t.Fatal(err)
	}
	f.fork("f", "x", 200)
	f.fork("g", "f", 150)
	if r, b, err := postgres.MessageRows(f.s); err != nil || r != rows || b != bytes {
		t.Fatalf("after two forks the messages take %d rows, %d bytes (%v); want %d, %d as before", r, b, err, rows, bytes)
	}
	f.append("f", 2)
	if r, _, err := postgres.MessageRows(f.s); err != nil || r != rows+2 {
		t.Fatalf("after the fork's two messages: %d rows (%v); want %d", r, err, rows+2)
	}
	f.check("the forks")
}
