package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// This file holds history.RangeReader's part of the suite: a range of a
// conversation's messages reads as that part of its Messages, through its
// bases for a fork, before and after a rewind and a switch moved them.

// rangeReader is s as a history.RangeReader; it fails t when s is not
// one (every store of the suite reads ranges: a check of one point must
// not read a whole conversation).
func rangeReader(t *testing.T, s history.Store) history.RangeReader {
	t.Helper()
	r, ok := s.(history.RangeReader)
	if !ok {
		t.Fatalf("%T does not implement history.RangeReader (MessagesBetween)", s)
	}
	return r
}

// readsBetween fails t unless every range of each conversation of want,
// from 0 to one past its end and beyond, reads in st as that part of its
// messages (cut at the end).
func (e *env) readsBetween(when string, st history.Store, want map[string][]history.Message) {
	e.t.Helper()
	r := rangeReader(e.t, st)
	for id, msgs := range want {
		for from := 0; from <= len(msgs)+1; from++ {
			for to := from; to <= len(msgs)+2; to++ {
				got, err := r.MessagesBetween(e.ctx, id, from, to)
				if err != nil {
					e.t.Fatalf("%s: MessagesBetween(%s, %d, %d): %v", when, id, from, to, err)
				}
				hi := min(to, len(msgs))
				lo := min(from, hi)
				sameBytes(e.t, fmt.Sprintf("%s: MessagesBetween(%s, %d, %d) of its %d", when, id, from, to, len(msgs)), got, msgs[lo:hi])
			}
		}
	}
}

// rangesReadAsMessages: MessagesBetween of a conversation, of a fork of
// it, of a fork of that fork, each with messages of its own, reads their
// messages' ranges — also in another opening, and after a rewind of the
// base, the base going on, and a switch back and forth; a bad range or
// an unknown conversation is an error saying so.
func rangesReadAsMessages(t *testing.T, s Subject) {
	e := s.branching(t, "c", WithRecords()...)
	r := rangeReader(t, e.s)
	old := e.read(e.open(), "c") // as stored, times set
	want := map[string][]history.Message{"c": old}
	e.readsBetween("a conversation of its own", e.s, want)

	e.fork(history.Conversation{ID: "f", Base: "c", BaseAt: 5})
	if err := e.s.Append(e.ctx, "f", Numbered("f", 3)...); err != nil {
		t.Fatal(err)
	}
	e.fork(history.Conversation{ID: "ff", Base: "f", BaseAt: 7})
	if err := e.s.Append(e.ctx, "ff", Numbered("ff", 2)...); err != nil {
		t.Fatal(err)
	}
	fOwn, ffOwn := e.read(e.open(), "f")[5:], e.read(e.open(), "ff")[7:]
	want["f"] = join(old[:5], fOwn)
	want["ff"] = join(old[:5], fOwn[:2], ffOwn)
	e.readsBetween("forks", e.s, want)
	e.readsBetween("forks, in another opening", e.open(), want)

	for _, st := range []history.Store{e.s, e.open()} {
		e.read(st, "c") // what an opening keeps of a read must not be what a range reads after a move
	}
	br := e.rewind("c", 3).ID
	want["c"], want[br] = old[:3], old
	e.readsBetween("after a rewind of the base before the forks' points", e.s, want)
	if err := e.s.Append(e.ctx, "c", Numbered("new", 4)...); err != nil {
		t.Fatal(err)
	}
	want["c"] = join(old[:3], e.read(e.open(), "c")[3:])
	e.readsBetween("after the base went on", e.s, want)
	e.readsBetween("after the base went on, in another opening", e.open(), want)
	e.switchTo("c", br)
	want["c"], want[br] = want[br], want["c"]
	e.readsBetween("after a switch", e.s, want)
	e.readsBetween("after a switch, in another opening", e.open(), want)
	e.switchTo("c", br)
	want["c"], want[br] = want[br], want["c"]
	e.readsBetween("after the switch back", e.s, want)

	for _, bad := range [][2]int{{-1, 2}, {4, 3}} {
		if got, err := r.MessagesBetween(e.ctx, "c", bad[0], bad[1]); err == nil || errors.Is(err, history.ErrNotFound) {
			t.Fatalf("MessagesBetween(c, %d, %d) = %d messages, %v; want an error saying the range is bad", bad[0], bad[1], len(got), err)
		}
	}
	if _, err := r.MessagesBetween(e.ctx, "nobody", 0, 3); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("MessagesBetween of an unknown conversation: %v; want ErrNotFound", err)
	}
}
