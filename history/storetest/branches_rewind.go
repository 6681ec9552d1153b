package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// This file holds history.Brancher's rewinds and switches to the suite: a
// rewind keeps what followed as a branch, a switch swaps them, and no
// other conversation reads anything else for it (docs/branches.md).

// rewind rewinds id to at in e's first opening; it fails t on an error.
func (e *env) rewind(id string, at int) history.Conversation {
	e.t.Helper()
	br, err := brancher(e.t, e.s).Rewind(e.ctx, id, at)
	if err != nil {
		e.t.Fatalf("Rewind(%s, %d): %v", id, at, err)
	}
	return br
}

// switchTo switches id to branch in e's first opening; it fails t on an
// error.
func (e *env) switchTo(id, branch string) {
	e.t.Helper()
	if err := brancher(e.t, e.s).Switch(e.ctx, id, branch); err != nil {
		e.t.Fatalf("Switch(%s, %s): %v", id, branch, err)
	}
}

// branchIDs is the ids of id's branches, oldest first, in st.
func (e *env) branchIDs(st history.Store, id string) []string {
	e.t.Helper()
	brs, err := brancher(e.t, st).Branches(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Branches(%s): %v", id, err)
	}
	var ids []string
	for _, b := range brs {
		if b.BranchOf != id {
			e.t.Fatalf("Branches(%s) holds %s, whose BranchOf is %q", id, b.ID, b.BranchOf)
		}
		ids = append(ids, b.ID)
	}
	return ids
}

// rewindKeepsBranch: a rewind leaves the first at messages; what followed
// is a branch that reads them all, Get and Branches find and List does
// not list — in every opening.
func rewindKeepsBranch(t *testing.T, s Subject) {
	e := s.env(t)
	brancher(t, e.s)
	if err := e.s.Create(e.ctx, history.Conversation{ID: "c", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "c", WithRecords()...); err != nil {
		t.Fatal(err)
	}
	old := e.read(e.s, "c")
	if ids := e.branchIDs(e.s, "c"); len(ids) != 0 {
		t.Fatalf("Branches of a conversation never rewound = %v; want none", ids)
	}
	br := e.rewind("c", 4)
	if br.ID == "" || br.ID == "c" || br.BranchOf != "c" || br.Messages != len(old) || br.System != "be brief" {
		t.Fatalf("Rewind(c, 4) = %+v; want a new branch of c holding its %d messages, with c's system prompt", br, len(old))
	}
	for name, st := range map[string]history.Store{"the rewinding opening": e.s, "another opening": e.open()} {
		if c := e.record(st, "c"); c.Messages != 4 || c.BranchOf != "" {
			t.Fatalf("%s: Get(c) after the rewind = %+v; want 4 messages", name, c)
		}
		sameBytes(t, name+": c after the rewind", e.read(st, "c"), old[:4])
		sameBytes(t, name+": the branch", e.read(st, br.ID), old)
		if got := e.record(st, br.ID); got.BranchOf != "c" || got.Messages != len(old) {
			t.Fatalf("%s: Get(%s) = %+v; want the branch of c as Rewind returned it", name, br.ID, got)
		}
		if ids := e.branchIDs(st, "c"); len(ids) != 1 || ids[0] != br.ID {
			t.Fatalf("%s: Branches(c) = %v; want [%s]", name, ids, br.ID)
		}
		list, err := st.List(e.ctx)
		if err != nil || len(list) != 1 || list[0].ID != "c" {
			t.Fatalf("%s: List = %+v, %v; want c alone, its branch left out", name, list, err)
		}
	}
	e.sharesTruly("c", br.ID)
	// a second rewind makes a second branch, listed after the first
	e.clock.Add(time.Second)
	br2 := e.rewind("c", 0)
	if ids := e.branchIDs(e.open(), "c"); len(ids) != 2 || ids[0] != br.ID || ids[1] != br2.ID {
		t.Fatalf("Branches(c) after two rewinds = %v; want [%s %s], oldest first", ids, br.ID, br2.ID)
	}
	sameBytes(t, "c rewound to its start", e.read(e.open(), "c"), nil)
	sameBytes(t, "the second branch", e.read(e.open(), br2.ID), old[:4])
	sameBytes(t, "the first branch", e.read(e.open(), br.ID), old)
	e.sharesTruly("c", br.ID, br2.ID)
	if _, err := brancher(t, e.s).Branches(e.ctx, "nowhere"); !errors.Is(err, history.ErrNotFound) || !contains(err, "nowhere") {
		t.Fatalf("Branches(nowhere) = %v; want ErrNotFound naming it", err)
	}
}

// rewindRefused: a rewind to a point not before the end, or before the
// start, is refused saying so; one of an unknown conversation is not
// found; and a rewind is a write, refused outside its claim as an Append
// is. Nothing changes.
func rewindRefused(t *testing.T, s Subject) {
	e := s.branching(t, "c", Numbered("c", 3)...)
	b := brancher(t, e.s)
	unchanged := func(what string) {
		t.Helper()
		sameMessages(t, e.read(e.open(), "c"), Numbered("c", 3))
		if ids := e.branchIDs(e.open(), "c"); len(ids) != 0 {
			t.Fatalf("after %s, c has branches %v; want none made", what, ids)
		}
	}
	for _, at := range []int{3, 4, -1} {
		_, err := b.Rewind(e.ctx, "c", at)
		if !contains(err, "rewinding conversation c") || !contains(err, fmt.Sprint(at)) || !contains(err, "holds 3") {
			t.Errorf("Rewind(c, %d) = %v; want it refused, saying c holds 3", at, err)
		}
		unchanged(fmt.Sprintf("Rewind(c, %d)", at))
	}
	if _, err := b.Rewind(e.ctx, "nowhere", 0); !errors.Is(err, history.ErrNotFound) || !contains(err, "nowhere") {
		t.Errorf("Rewind(nowhere, 0) = %v; want ErrNotFound naming it", err)
	}
	holder, err := e.s.Claim(e.ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Rewind(e.ctx, "c", 1)
	var held *history.HeldError
	if !errors.As(err, &held) || held.Holder.Token != holder.Token {
		t.Fatalf("Rewind while another holds the claim: %v; want a HeldError naming it", err)
	}
	unchanged("a rewind outside the claim")
	if _, err := b.Rewind(history.Writing(e.ctx, history.NewHolder()), "c", 1); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("Rewind by a writer not holding the claim: %v; want ErrClaimLost", err)
	}
	unchanged("a rewind by a writer not holding the claim")
	if _, err := b.Rewind(history.Writing(e.ctx, holder), "c", 1); err != nil {
		t.Fatalf("Rewind by the claim's holder: %v", err)
	}
	sameMessages(t, e.read(e.open(), "c"), Numbered("c", 1))
}

// rewindContinueSwitch: rewind, go on, switch to the branch and back:
// both are whole each time, and the branch keeps its id.
func rewindContinueSwitch(t *testing.T, s Subject) {
	old := Numbered("old", 4)
	e := s.branching(t, "c", old...)
	b := brancher(t, e.s)
	br := e.rewind("c", 2).ID
	fresh := Numbered("new", 3)
	if err := e.s.Append(e.ctx, "c", fresh...); err != nil {
		t.Fatal(err)
	}
	now := join(old[:2], fresh)
	for i, want := range []struct{ c, br []history.Message }{{old, now}, {now, old}, {old, now}} {
		e.switchTo("c", br)
		for name, st := range map[string]history.Store{"the switching opening": e.s, "another opening": e.open()} {
			sameMessages(t, e.read(st, "c"), want.c)
			sameMessages(t, e.read(st, br), want.br)
			if ids := e.branchIDs(st, "c"); len(ids) != 1 || ids[0] != br {
				t.Fatalf("%s: Branches(c) after switch %d = %v; want [%s]", name, i+1, ids, br)
			}
		}
		e.sharesTruly("c", br)
	}
	// what c appends after a switch is c's alone
	if err := e.s.Append(e.ctx, "c", UserText("on the old line")); err != nil {
		t.Fatal(err)
	}
	sameMessages(t, e.read(e.open(), "c"), join(old, []history.Message{UserText("on the old line")}))
	sameMessages(t, e.read(e.open(), br), now)

	e.conversation("other")
	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 1})
	for _, tc := range []struct{ id, branch, says string }{
		{"c", "other", "other"},
		{"c", "f", "f"},
		{br, "c", "c"},
		{"other", br, "branch of c"},
	} {
		err := b.Switch(e.ctx, tc.id, tc.branch)
		if !errors.Is(err, history.ErrNotBranch) || !contains(err, tc.says) {
			t.Errorf("Switch(%s, %s) = %v; want ErrNotBranch saying %q", tc.id, tc.branch, err, tc.says)
		}
	}
	if err := b.Switch(e.ctx, "c", "nowhere"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("Switch(c, nowhere) = %v; want ErrNotFound", err)
	}
	holder, err := e.s.Claim(e.ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var held *history.HeldError
	if err := b.Switch(e.ctx, "c", br); !errors.As(err, &held) {
		t.Fatalf("Switch while another holds the claim: %v; want a HeldError", err)
	}
	if err := b.Switch(history.Writing(e.ctx, holder), "c", br); err != nil {
		t.Fatalf("Switch by the claim's holder: %v", err)
	}
	sameMessages(t, e.read(e.open(), "c"), now)
}

// switchAmongBranches: undo twice and redo twice (rewinds of the last
// message, switches back newest first), then rewinds that went on, and a
// switch to the older branch past the newer one: every conversation reads
// what it read, the records' shares true throughout.
func switchAmongBranches(t *testing.T, s Subject) {
	old := Numbered("old", 8)
	e := s.branching(t, "c", old...)
	b1 := e.rewind("c", 6).ID
	b2 := e.rewind("c", 4).ID
	e.sharesTruly("c", b1, b2)
	e.switchTo("c", b2) // redo
	sameMessages(t, e.read(e.open(), "c"), old[:6])
	sameMessages(t, e.read(e.open(), b2), old[:4])
	e.switchTo("c", b1) // redo again
	sameMessages(t, e.read(e.open(), "c"), old)
	sameMessages(t, e.read(e.open(), b1), old[:6])
	sameMessages(t, e.read(e.open(), b2), old[:4])
	e.sharesTruly("c", b1, b2)

	e.conversation("d")
	if err := e.s.Append(e.ctx, "d", old...); err != nil {
		t.Fatal(err)
	}
	x, y := Numbered("x", 2), Numbered("y", 3)
	d1 := e.rewind("d", 6).ID
	if err := e.s.Append(e.ctx, "d", x...); err != nil {
		t.Fatal(err)
	}
	d2 := e.rewind("d", 4).ID
	if err := e.s.Append(e.ctx, "d", y...); err != nil {
		t.Fatal(err)
	}
	want := map[string][]history.Message{"d": join(old[:4], y), d1: old, d2: join(old[:6], x)}
	e.reads("after two rewinds that went on", want)
	e.switchTo("d", d1)
	want["d"], want[d1] = want[d1], want["d"]
	e.reads("after a switch to the older branch", want)
	e.switchTo("d", d2)
	want["d"], want[d2] = want[d2], want["d"]
	e.reads("after a switch to the newer branch", want)
	e.switchTo("d", d1)
	want["d"], want[d1] = want[d1], want["d"]
	e.reads("after a switch back to the older branch", want)
}

// forkOfRewound: forks of a conversation made before it is rewound read
// the same after the rewind and after each switch, and so does a fork of
// its branch; appends to any of them stay theirs.
func forkOfRewound(t *testing.T, s Subject) {
	old := Numbered("old", 6)
	e := s.branching(t, "c", old...)
	e.fork(history.Conversation{ID: "past", Base: "c", BaseAt: 5})
	e.fork(history.Conversation{ID: "before", Base: "c", BaseAt: 2})
	e.fork(history.Conversation{ID: "at", Base: "c", BaseAt: 3})
	if err := e.s.Append(e.ctx, "past", UserText("past's own")); err != nil {
		t.Fatal(err)
	}
	want := map[string][]history.Message{
		"past":   join(old[:5], []history.Message{UserText("past's own")}),
		"before": old[:2],
		"at":     old[:3],
	}
	br := e.rewind("c", 3).ID
	want["c"], want[br] = old[:3], old
	e.reads("after the rewind", want)
	e.fork(history.Conversation{ID: "of-branch", Base: br, BaseAt: 4})
	want["of-branch"] = old[:4]
	if err := e.s.Append(e.ctx, "c", Numbered("new", 2)...); err != nil {
		t.Fatal(err)
	}
	want["c"] = join(old[:3], Numbered("new", 2))
	e.reads("after c went on", want)
	e.switchTo("c", br)
	want["c"], want[br] = want[br], want["c"]
	e.reads("after the switch", want)
	e.switchTo("c", br)
	want["c"], want[br] = want[br], want["c"]
	e.reads("after the switch back", want)
	if err := e.s.Append(e.ctx, "past", UserText("more")); err != nil {
		t.Fatal(err)
	}
	want["past"] = append(want["past"], UserText("more"))
	e.reads("after the fork went on", want)
}

// deleteWithForks: a conversation whose messages a fork shares, its own
// or its branch's, is not deleted (ErrHasForks naming the fork); once the
// forks are gone it is, with its branches.
func deleteWithForks(t *testing.T, s Subject) {
	e := s.branching(t, "c", Numbered("c", 4)...)
	d := deleter(t, e.s)
	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 2})
	err := d.Delete(e.ctx, "c")
	if !errors.Is(err, history.ErrHasForks) || !contains(err, "f") || !contains(err, "deleting conversation c") {
		t.Fatalf("Delete of a conversation a fork shares: %v; want ErrHasForks naming the fork", err)
	}
	sameMessages(t, e.read(e.open(), "c"), Numbered("c", 4))
	sameMessages(t, e.read(e.open(), "f"), Numbered("c", 2))
	br := e.rewind("c", 1).ID // f's messages are now the branch's
	if err := d.Delete(e.ctx, "c"); !errors.Is(err, history.ErrHasForks) || !contains(err, "f") {
		t.Fatalf("Delete of a conversation whose branch a fork shares: %v; want ErrHasForks naming the fork", err)
	}
	sameMessages(t, e.read(e.open(), "f"), Numbered("c", 2))
	sameMessages(t, e.read(e.open(), br), Numbered("c", 4))
	if err := d.Delete(e.ctx, "f"); err != nil {
		t.Fatalf("Delete of the fork: %v", err)
	}
	if err := d.Delete(e.ctx, "c"); err != nil {
		t.Fatalf("Delete of c once its fork is gone: %v", err)
	}
	for _, id := range []string{"c", br, "f"} {
		if _, err := e.open().Get(e.ctx, id); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("after the deletes, Get(%s) = %v; want ErrNotFound", id, err)
		}
	}
	// the ids are free again
	e.conversation("c")
	if ids := e.branchIDs(e.open(), "c"); len(ids) != 0 {
		t.Fatalf("c made again has branches %v; want none", ids)
	}
}

// keptGoWithRewind: results kept for the unfinished round go with the
// rewound messages to the branch.
func keptGoWithRewind(t *testing.T, s Subject) {
	e := s.branching(t, "c", SampleMessages()...)
	ask := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "toolu_2", Name: "workspace--read", Input: []byte(`{"path":"b.txt"}`)}}}
	if err := e.s.Append(e.ctx, "c", ask); err != nil {
		t.Fatal(err)
	}
	kept := history.Part{Type: history.ToolResultPart, CallID: "toolu_2", Text: "b's text"}
	if err := e.s.Keep(e.ctx, "c", kept); err != nil {
		t.Fatal(err)
	}
	br := e.rewind("c", 2).ID
	other := e.open()
	if got, err := other.Kept(e.ctx, "c"); err != nil || len(got) != 0 {
		t.Fatalf("Kept(c) after the rewind = %+v, %v; want none: its round went to the branch", got, err)
	}
	got, err := other.Kept(e.ctx, br)
	if err != nil || len(got) != 1 || got[0].CallID != "toolu_2" || got[0].Text != "b's text" {
		t.Fatalf("Kept(%s) of the branch = %+v, %v; want the result kept for its round", br, got, err)
	}
}

// forksWhileAppending: forks of a conversation made while its owner
// appends, through two openings, each read exactly the first messages
// they asked for.
func forksWhileAppending(t *testing.T, s Subject) {
	e := s.env(t)
	brancher(t, e.s)
	e.conversation("c")
	owner, err := e.s.Claim(e.ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	const appends, forkers, forksEach = 30, 4, 5
	stores := []history.Store{e.s, e.open()}
	var wg sync.WaitGroup
	errs := make(chan error, appends+forkers*forksEach)
	wg.Go(func() {
		for i := range appends {
			if err := e.s.Append(history.Writing(e.ctx, owner), "c", UserText(fmt.Sprintf("m %d", i))); err != nil {
				errs <- fmt.Errorf("append %d: %w", i, err)
				return
			}
		}
	})
	asked := make([][]int, forkers)
	for w := range forkers {
		wg.Go(func() {
			st := stores[w%2]
			for i := range forksEach {
				c, err := st.Get(e.ctx, "c")
				if err != nil {
					errs <- err
					return
				}
				id := fmt.Sprintf("f%d-%d", w, i)
				if _, err := st.(history.Brancher).Fork(e.ctx, history.Conversation{ID: id, Base: "c", BaseAt: c.Messages}); err != nil {
					errs <- fmt.Errorf("fork %s at %d: %w", id, c.Messages, err)
					return
				}
				asked[w] = append(asked[w], c.Messages)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	all := e.read(e.open(), "c")
	if len(all) != appends {
		t.Fatalf("c holds %d messages after %d appends", len(all), appends)
	}
	for w := range forkers {
		for i, at := range asked[w] {
			id := fmt.Sprintf("f%d-%d", w, i)
			sameBytes(t, fmt.Sprintf("fork %s at %d", id, at), e.read(e.open(), id), all[:at])
		}
	}
}

// forkRewoundBeforeItsPoint: a fork rewound to before the point it
// shares its base up to keeps all it read as the branch, reads its base's
// first messages alone, and goes on, switches and switches back like any
// conversation; a fork of its own messages, and its base rewound under
// it, change nothing anyone reads.
func forkRewoundBeforeItsPoint(t *testing.T, s Subject) {
	old := Numbered("b", 6)
	e := s.branching(t, "b", old...)
	e.fork(history.Conversation{ID: "f", Base: "b", BaseAt: 4})
	own := Numbered("f", 2)
	if err := e.s.Append(e.ctx, "f", own...); err != nil {
		t.Fatal(err)
	}
	e.fork(history.Conversation{ID: "g", Base: "f", BaseAt: 5})
	fb := e.rewind("f", 2).ID
	want := map[string][]history.Message{
		"b": old, "f": old[:2], fb: join(old[:4], own), "g": join(old[:4], own[:1]),
	}
	e.reads("after the rewind", want)
	if err := e.s.Append(e.ctx, "f", UserText("f anew")); err != nil {
		t.Fatal(err)
	}
	want["f"] = join(old[:2], []history.Message{UserText("f anew")})
	e.reads("after the fork went on", want)
	for i := range 2 {
		e.switchTo("f", fb)
		want["f"], want[fb] = want[fb], want["f"]
		e.reads(fmt.Sprintf("after switch %d", i+1), want)
	}
	bb := e.rewind("b", 1).ID
	want["b"], want[bb] = old[:1], old
	e.reads("after its base was rewound under it", want)
	e.sharesTruly(bb)
}

// brancherCancelled: Fork, Rewind, Branches and Switch under a cancelled
// context fail with context.Canceled, and make nothing.
func brancherCancelled(t *testing.T, s Subject) {
	e := s.branching(t, "c", Numbered("c", 2)...)
	b := brancher(t, e.s)
	br := e.rewind("c", 1).ID
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	for name, err := range map[string]error{
		"Fork":     func() error { _, err := b.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 1}); return err }(),
		"Rewind":   func() error { _, err := b.Rewind(ctx, "c", 0); return err }(),
		"Branches": func() error { _, err := b.Branches(ctx, "c"); return err }(),
		"Switch":   b.Switch(ctx, "c", br),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s under a cancelled context: %v; want context.Canceled", name, err)
		}
	}
	sameMessages(t, e.read(e.open(), "c"), Numbered("c", 1))
	sameMessages(t, e.read(e.open(), br), Numbered("c", 2))
	if _, err := e.open().Get(e.ctx, "f"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("after a Fork under a cancelled context, Get(f) = %v; want ErrNotFound", err)
	}
}

// branchWriterRefuses: a switch changes what the branch holds, and a
// delete takes the branches along; while a live holder of a branch's own
// claim may be writing it (someone went on with the branch as a
// conversation), both are refused with a HeldError naming the branch,
// whoever holds the conversation's claim, and nothing changes. Once the
// branch's claim is released, both go through.
func branchWriterRefuses(t *testing.T, s Subject) {
	old := Numbered("c", 4)
	e := s.branching(t, "c", old...)
	br := e.rewind("c", 2).ID
	owner, err := e.s.Claim(e.ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := e.s.Claim(e.ctx, br, elsewhere(), history.DefaultLease)
	if err != nil {
		t.Fatalf("claiming the branch %s: %v", br, err)
	}
	b, d := brancher(t, e.s), deleter(t, e.s)
	for name, err := range map[string]error{
		"Switch by the owner of c":    b.Switch(history.Writing(e.ctx, owner), "c", br),
		"Delete by the owner of c":    d.Delete(history.Writing(e.ctx, owner), "c"),
		"Switch by the branch writer": b.Switch(history.Writing(e.ctx, writer), "c", br),
	} {
		var held *history.HeldError
		if errors.As(err, &held) && held.Conversation == br && held.Holder.Token == writer.Token {
			continue
		}
		if name == "Switch by the branch writer" && errors.Is(err, history.ErrClaimLost) {
			continue // it does not hold c's claim: refused for that first
		}
		t.Errorf("%s while a live holder has the branch's claim: %v; want a HeldError naming %s and its holder", name, err, br)
	}
	e.reads("after the refused switches and delete", map[string][]history.Message{"c": old[:2], br: old})
	if err := e.s.Release(e.ctx, br, writer); err != nil {
		t.Fatal(err)
	}
	if err := b.Switch(history.Writing(e.ctx, owner), "c", br); err != nil {
		t.Fatalf("Switch once the branch's claim is released: %v", err)
	}
	e.reads("after the switch", map[string][]history.Message{"c": old, br: old[:2]})
	if err := d.Delete(history.Writing(e.ctx, owner), "c"); err != nil {
		t.Fatalf("Delete once the branch's claim is released: %v", err)
	}
}

// deleteTakesBranchesOfBranches: a branch rewound has branches of its
// own; deleting the conversation takes them all along (every store), and
// is refused, naming it, while a fork shares a branch's branch's
// messages.
func deleteTakesBranchesOfBranches(t *testing.T, s Subject) {
	old := Numbered("c", 6)
	e := s.branching(t, "c", old...)
	d := deleter(t, e.s)
	b1 := e.rewind("c", 4).ID

	bb, err := brancher(t, e.s).Rewind(e.ctx, b1, 5)
	if err != nil {
		t.Fatalf("rewinding the branch %s: %v", b1, err)
	}
	bz, err := brancher(t, e.s).Rewind(e.ctx, b1, 0) // a branch's branch sharing nothing of it
	if err != nil {
		t.Fatalf("rewinding the branch %s to its start: %v", b1, err)
	}
	if bb.BranchOf != b1 || bz.BranchOf != b1 {
		t.Fatalf("the rewinds of branch %s made %+v and %+v; want branches of it", b1, bb, bz)
	}
	e.fork(history.Conversation{ID: "f", Base: bb.ID, BaseAt: 6})
	err = d.Delete(e.ctx, "c")
	if !errors.Is(err, history.ErrHasForks) || !contains(err, "[f]") {
		t.Fatalf("Delete of c while a fork shares its branch's branch: %v; want ErrHasForks naming f alone", err)
	}
	e.reads("after the refused delete", map[string][]history.Message{"c": old[:4], b1: nil, bb.ID: old, bz.ID: old[:5], "f": old})
	if err := d.Delete(e.ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(e.ctx, "c"); err != nil {
		t.Fatalf("Delete of c with branches of branches: %v; want them deleted with it", err)
	}
	for _, id := range []string{"c", b1, bb.ID, bz.ID} {
		if _, err := e.open().Get(e.ctx, id); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("after deleting c, Get(%s) = %v; want ErrNotFound: gone with it", id, err)
		}
	}
	if list, err := e.open().List(e.ctx); err != nil || len(list) != 0 {
		t.Errorf("after deleting c, List = %+v, %v; want nothing left", list, err)
	}
}

// requestsStayWithTheirConversation: the requests log (history.Requests)
// is what was sent for a conversation, in order, numbered as the API
// shows it: a rewind or a switch moves messages, never requests. The
// rewound conversation keeps every request, byte for byte and under its
// number, and numbers the next one after them; a branch has none of its
// own until one is sent for it (docs/branches.md).
func requestsStayWithTheirConversation(t *testing.T, s Subject) {
	old := Numbered("c", 6)
	e := s.branching(t, "c", old...)
	reqs := e.requests(t, e.s)
	bodies := RequestBodies(4)
	for i, b := range bodies[:3] {
		if _, err := reqs.AddRequest(e.ctx, "c", history.SentRequest{Wire: "w", Msg: 2*i + 1, Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	same := func(when, id string, want [][]byte) {
		t.Helper()
		r := e.open().(history.Requests)
		list, err := r.RequestList(e.ctx, id)
		if err != nil || len(list) != len(want) {
			t.Fatalf("%s: RequestList(%s) = %d requests, %v; want %d", when, id, len(list), err, len(want))
		}
		for i, b := range want {
			got, err := r.Request(e.ctx, id, i+1)
			if err != nil || string(got.Body) != string(b) || got.N != i+1 || list[i].N != i+1 {
				t.Fatalf("%s: request %d of %s = %+v, %v; want it byte for byte under its number", when, i+1, id, got, err)
			}
		}
	}
	br := e.rewind("c", 2).ID
	same("after the rewind", "c", bodies[:3])
	same("after the rewind", br, nil)
	e.switchTo("c", br)
	same("after the switch", "c", bodies[:3])
	same("after the switch", br, nil)
	if n, err := reqs.AddRequest(e.ctx, "c", history.SentRequest{Wire: "w", Msg: 6, Body: bodies[3]}); err != nil || n != 4 {
		t.Fatalf("the next request of c after the rewind and switch: number %d, %v; want 4, after those it kept", n, err)
	}
	same("after the next request", "c", bodies)
}
