package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// This file holds history.Marker's part of the suite: a mark set is read
// back with the messages from its place on, in this opening and another;
// an append leaves it; a rewind and a switch drop it from what they
// change; a fork, a branch and a conversation made again start without
// one; a bad mark or one set outside the claim is refused.

// marker is s as a history.Marker; it skips t when s is not one (a store
// without marks is read whole: history.ReadMarked).
func marker(t *testing.T, s history.Store) history.Marker {
	t.Helper()
	m, ok := s.(history.Marker)
	if !ok {
		t.Skipf("%T does not implement history.Marker (marks) yet", s)
	}
	return m
}

// marked fails e.t unless conversation id, read through st's Marked, has
// the mark want and the messages of all from want.From on (their stored
// bytes).
func (e *env) marked(when string, st history.Store, id string, want history.Mark, all []history.Message) {
	e.t.Helper()
	got, msgs, err := marker(e.t, st).Marked(e.ctx, id)
	if err != nil {
		e.t.Fatalf("%s: Marked(%s): %v", when, id, err)
	}
	if got.From != want.From || !bytes.Equal(got.Facts, want.Facts) {
		e.t.Fatalf("%s: Marked(%s) gives the mark from %d with facts %q; want from %d with %q", when, id, got.From, got.Facts, want.From, want.Facts)
	}
	sameBytes(e.t, fmt.Sprintf("%s: Marked(%s)'s messages from %d", when, id, want.From), msgs, all[want.From:])
}

// setMark sets m on id in st; it fails e.t on an error.
func (e *env) setMark(st history.Store, id string, m history.Mark) {
	e.t.Helper()
	if err := marker(e.t, st).SetMark(e.ctx, id, m); err != nil {
		e.t.Fatalf("SetMark(%s, from %d): %v", id, m.From, err)
	}
}

// marksAreReadBackWithTheirTail: a conversation with no mark reads whole
// under Mark{}; a mark set (facts of any bytes) comes back with the
// messages from its place on, in this opening and in another, also one
// that read the conversation before the mark was set; messages appended
// after it extend the tail and leave the mark; a later mark replaces it;
// Mark{} drops it.
func marksAreReadBackWithTheirTail(t *testing.T, s Subject) {
	e := s.env(t)
	marker(t, e.s)
	e.conversation("c")
	if err := e.s.Append(e.ctx, "c", WithRecords()...); err != nil {
		t.Fatal(err)
	}
	other := e.open()
	all := e.read(other, "c")
	e.marked("no mark set", e.s, "c", history.Mark{}, all)
	e.marked("no mark set, another opening", other, "c", history.Mark{}, all)

	facts := []byte("{\"settings\":\"\x00\xff\"}\n")
	m := history.Mark{From: 4, Facts: facts}
	e.setMark(e.s, "c", m)
	facts[0] = 'X' // the store keeps its own copy
	m.Facts = []byte("{\"settings\":\"\x00\xff\"}\n")
	e.marked("a mark set", e.s, "c", m, all)
	e.marked("a mark set, in an opening that read before it was set", other, "c", m, all)
	e.marked("a mark set, in a new opening", e.open(), "c", m, all)

	if err := e.s.Append(e.ctx, "c", Numbered("after", 3)...); err != nil {
		t.Fatal(err)
	}
	all = e.read(e.open(), "c")
	e.marked("after an append", e.s, "c", m, all)
	e.marked("after an append, another opening", other, "c", m, all)

	later := history.Mark{From: len(all), Facts: []byte("at the end")}
	e.setMark(other, "c", later)
	e.marked("a mark at the end, set by another opening", e.s, "c", later, all)
	e.marked("a mark at the end", other, "c", later, all)

	e.setMark(e.s, "c", history.Mark{})
	e.marked("a mark dropped", e.s, "c", history.Mark{}, all)
	e.marked("a mark dropped, another opening", e.open(), "c", history.Mark{}, all)

	// the messages returned are the caller's to extend, as Messages' are
	e.setMark(e.s, "c", m)
	_, tail, err := marker(t, e.s).Marked(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	_ = append(tail, UserText("not stored"))
	e.marked("after a caller appended to a tail read", e.s, "c", m, all)
}

// badMarksAreRefused: a mark before 0 or past the end, facts with no
// place, a mark of an unknown conversation, one set outside a live
// holder's claim, and one by a holder that lost it are each refused
// (the claim's errors as Append's), and leave the mark that stood.
func badMarksAreRefused(t *testing.T, s Subject) {
	e := s.env(t)
	mk := marker(t, e.s)
	e.conversation("c")
	if err := e.s.Append(e.ctx, "c", Numbered("m", 5)...); err != nil {
		t.Fatal(err)
	}
	all := e.read(e.s, "c")
	stood := history.Mark{From: 2, Facts: []byte("f")}
	e.setMark(e.s, "c", stood)
	for _, bad := range []history.Mark{{From: -1}, {From: 6, Facts: []byte("f")}, {From: 0, Facts: []byte("f")}} {
		err := mk.SetMark(e.ctx, "c", bad)
		if err == nil || errors.Is(err, history.ErrNotFound) {
			t.Fatalf("SetMark(c, from %d with %d bytes of facts) of a conversation of 5: %v; want an error saying what is wrong", bad.From, len(bad.Facts), err)
		}
	}
	if err := mk.SetMark(e.ctx, "nobody", history.Mark{From: 0}); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("SetMark of an unknown conversation: %v; want ErrNotFound", err)
	}
	if _, _, err := mk.Marked(e.ctx, "nobody"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Marked of an unknown conversation: %v; want ErrNotFound", err)
	}

	a, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var held *history.HeldError
	if err := mk.SetMark(e.ctx, "c", history.Mark{From: 3}); !errors.As(err, &held) || held.Holder.Token != a.Token {
		t.Fatalf("a mark set outside the claim while it is held: %v; want a HeldError", err)
	}
	if err := mk.SetMark(history.Writing(e.ctx, history.NewHolder()), "c", history.Mark{From: 3}); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("a mark set by a holder that never claimed: %v; want ErrClaimLost", err)
	}
	e.marked("after refused marks", e.open(), "c", stood, all)
	if err := mk.SetMark(history.Writing(e.ctx, a), "c", history.Mark{From: 5, Facts: []byte("g")}); err != nil {
		t.Fatalf("a mark set by the claim's holder: %v", err)
	}
	e.marked("a mark set by the holder", e.open(), "c", history.Mark{From: 5, Facts: []byte("g")}, all)

	// a holder whose lease ran out and whose claim another took over
	e.clock.Add(2 * time.Minute)
	if _, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute); err != nil {
		t.Fatalf("a claim after the lease ran out: %v", err)
	}
	if err := mk.SetMark(history.Writing(e.ctx, a), "c", history.Mark{From: 1, Facts: []byte("late")}); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("a mark set by a holder whose claim was taken over: %v; want ErrClaimLost", err)
	}
	e.marked("after a mark by a holder that lost the claim", e.open(), "c", history.Mark{From: 5, Facts: []byte("g")}, all)
}

// marksGoWithWhatTheyWereSetOver: a rewind drops the rewound
// conversation's mark, and its branch starts with none; a switch drops
// the marks of both conversations it changes; a fork starts without its
// base's, and a fork's own mark reads through its base; a fork keeps its
// mark through a rewind of its base (its messages do not change); a
// conversation deleted and made again has none.
func marksGoWithWhatTheyWereSetOver(t *testing.T, s Subject) {
	e := s.branching(t, "c", WithRecords()...)
	marker(t, e.s)
	all := e.read(e.open(), "c")
	m := history.Mark{From: 5, Facts: []byte("c's")}
	e.setMark(e.s, "c", m)

	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 6})
	if err := e.s.Append(e.ctx, "f", Numbered("f", 3)...); err != nil {
		t.Fatal(err)
	}
	fAll := e.read(e.open(), "f")
	e.marked("a fork of a marked conversation", e.s, "f", history.Mark{}, fAll)
	fm := history.Mark{From: 2, Facts: []byte("f's")}
	e.setMark(e.s, "f", fm)
	e.marked("a fork's mark inside its base's messages", e.s, "f", fm, fAll)
	e.marked("a fork's mark inside its base's messages, another opening", e.open(), "f", fm, fAll)

	other := e.open()
	e.marked("before the rewind, another opening", other, "c", m, all)
	br := e.rewind("c", 7).ID
	e.marked("a rewound conversation", e.s, "c", history.Mark{}, all[:7])
	e.marked("a rewound conversation, in an opening that read its mark before", other, "c", history.Mark{}, all[:7])
	e.marked("the branch a rewind made", e.s, br, history.Mark{}, all)
	e.marked("a fork of a rewound base", other, "f", fm, fAll)

	e.setMark(e.s, "c", history.Mark{From: 3, Facts: []byte("c again")})
	e.setMark(e.s, br, history.Mark{From: 6, Facts: []byte("branch's")})
	if err := e.s.Append(e.ctx, "c", Numbered("new", 2)...); err != nil {
		t.Fatal(err)
	}
	cAll := e.read(e.open(), "c")
	e.marked("after the base went on", other, "c", history.Mark{From: 3, Facts: []byte("c again")}, cAll)
	e.switchTo("c", br)
	e.marked("a switched conversation", e.s, "c", history.Mark{}, all)
	e.marked("a switched conversation, in an opening that read its mark before", other, "c", history.Mark{}, all)
	e.marked("the branch a switch changed", other, br, history.Mark{}, cAll)

	if err := deleter(t, e.s).Delete(e.ctx, "f"); err != nil {
		t.Fatalf("Delete(f): %v", err)
	}
	e.conversation("f")
	e.marked("a conversation deleted and made again", other, "f", history.Mark{}, nil)
}

// recordReadsAsGet: a store's Record (history.RecordReader) gives each
// conversation's record as Get gives it, its count of messages included
// — a conversation of its own, a fork, a rewound one, its branch, after
// a switch — in this opening and another; an unknown conversation is not
// found.
func recordReadsAsGet(t *testing.T, s Subject) {
	e := s.branching(t, "c", WithRecords()...)
	if _, ok := e.s.(history.RecordReader); !ok {
		t.Skipf("%T does not implement history.RecordReader", e.s)
	}
	same := func(when string, ids ...string) {
		t.Helper()
		for _, st := range []history.Store{e.s, e.open()} {
			for _, id := range ids {
				got, err := st.(history.RecordReader).Record(e.ctx, id)
				if err != nil {
					t.Fatalf("%s: Record(%s): %v", when, id, err)
				}
				if want := e.record(st, id); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: Record(%s) = %+v; Get gives %+v", when, id, got, want)
				}
			}
		}
	}
	same("a conversation of its own", "c")
	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 4})
	if err := e.s.Append(e.ctx, "f", Numbered("f", 3)...); err != nil {
		t.Fatal(err)
	}
	same("a fork and its base", "c", "f")
	br := e.rewind("c", 2).ID
	same("a rewound conversation, its branch and a fork of it", "c", br, "f")
	if err := e.s.Append(e.ctx, "c", Numbered("new", 2)...); err != nil {
		t.Fatal(err)
	}
	e.switchTo("c", br)
	same("after a switch", "c", br, "f")
	if _, err := e.s.(history.RecordReader).Record(e.ctx, "nobody"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Record of an unknown conversation: %v; want ErrNotFound", err)
	}
}

// A fork that shares more than a rewind of its base keeps is repointed at
// the branch (its messages do not change): its mark, inside the shared
// messages, stays and reads through the branch — in the opening that
// rewound, one that read the fork's mark before, and a new one — and after
// a switch back, through its base again.
func forksMarkReadsThroughARepointedBase(t *testing.T, s Subject) {
	e := s.branching(t, "c", Numbered("c", 10)...)
	marker(t, e.s)
	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 8})
	if err := e.s.Append(e.ctx, "f", Numbered("f", 3)...); err != nil {
		t.Fatal(err)
	}
	fAll := e.read(e.open(), "f")
	fm := history.Mark{From: 4, Facts: []byte("f's")}
	e.setMark(e.s, "f", fm)
	other := e.open()
	e.marked("before the rewind, another opening", other, "f", fm, fAll)
	br := e.rewind("c", 3).ID
	if err := e.s.Append(e.ctx, "c", Numbered("new", 6)...); err != nil {
		t.Fatal(err)
	}
	e.marked("a fork of a base rewound below its point", e.s, "f", fm, fAll)
	e.marked("a fork of a base rewound below its point, an opening that read it before", other, "f", fm, fAll)
	e.marked("a fork of a base rewound below its point, a new opening", e.open(), "f", fm, fAll)
	e.switchTo("c", br)
	e.marked("after a switch back", e.s, "f", fm, fAll)
	e.marked("after a switch back, an opening that read it before", other, "f", fm, fAll)
	e.marked("after a switch back, a new opening", e.open(), "f", fm, fAll)
}

// A caller's append to the tail Marked returned never reaches the store,
// also after the store appended to the conversation: the caller's slice
// has no room past its end that the store's next message takes.
func tailsAreTheCallersThroughLaterAppends(t *testing.T, s Subject) {
	e := s.env(t)
	marker(t, e.s)
	e.conversation("c")
	for range 10 { // one at a time: a kept slice grows with room to spare
		if err := e.s.Append(e.ctx, "c", Numbered("m", 1)...); err != nil {
			t.Fatal(err)
		}
	}
	e.setMark(e.s, "c", history.Mark{From: 3, Facts: []byte("f")})
	for _, st := range []history.Store{e.s, e.open()} {
		_, tail, err := marker(t, st).Marked(e.ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(e.ctx, "c", UserText("stored")); err != nil {
			t.Fatal(err)
		}
		_ = append(tail, UserText("the caller's"))
		for _, r := range []history.Store{st, e.open()} {
			all := e.read(r, "c")
			if got := all[len(all)-1].Parts[0].Text; got != "stored" {
				t.Fatalf("the store's last message reads %q after a caller appended to a tail Marked gave it; want %q", got, "stored")
			}
			_, again, err := marker(t, r).Marked(e.ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if got := again[len(again)-1].Parts[0].Text; got != "stored" {
				t.Fatalf("Marked's last message reads %q after a caller appended to a tail Marked gave it; want %q", got, "stored")
			}
		}
	}
}
