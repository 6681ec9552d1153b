package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// This file holds history.Brancher's forks to the suite: a fork reads its
// base's first messages, shared and never copied, then its own, and the
// two go on apart (docs/branches.md). branches_rewind.go holds rewinds and
// switches.

// brancher is s as history.Brancher; it skips t for a store that forks
// nothing.
func brancher(t *testing.T, s history.Store) history.Brancher {
	t.Helper()
	b, ok := s.(history.Brancher)
	if !ok {
		t.Skipf("%T does not implement history.Brancher (forks and branches) yet", s)
	}
	return b
}

// Numbered returns n user messages "<prefix> 0" to "<prefix> n-1".
func Numbered(prefix string, n int) []history.Message {
	out := make([]history.Message, n)
	for i := range out {
		out[i] = UserText(fmt.Sprintf("%s %d", prefix, i))
	}
	return out
}

// WithRecords are a conversation's messages with its context records
// among them, as the agent stores them (contract §12): the settings an
// answer was sent with, an edit clearing a result, then a summary. A fork
// carries the records before its point, and only those.
func WithRecords() []history.Message {
	msgs := SampleMessages()
	msgs[1].Settings = &history.Settings{Model: "m1", System: "sys-hash", Tools: "tools-hash", Cache: "auto"}
	return append(msgs,
		history.Message{Role: history.Context, Edit: &history.Edit{
			Cleared: []history.Cleared{{Msg: 2, CallID: "toolu_1", Text: "[result cleared]", Path: ".myelin/tool-results/x.txt", Chars: 60, Images: 1}},
			Why:     "the window is full", Before: 900, After: 400,
		}},
		history.Message{Role: history.Assistant, Usage: &history.Usage{Input: 3, Output: 2}, Parts: []history.Part{{Type: history.TextPart, Text: "Done."}}},
		UserText("and now?"),
		history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "we read a.txt"}, Why: "compacted"}},
		history.Message{Role: history.Assistant, Settings: &history.Settings{Model: "m2", System: "sys-hash", Tools: "tools-hash"}, Parts: []history.Part{{Type: history.TextPart, Text: "Now this."}}},
	)
}

// read is conversation id's messages in st; it fails t on an error.
func (e *env) read(st history.Store, id string) []history.Message {
	e.t.Helper()
	msgs, err := st.Messages(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Messages(%s): %v", id, err)
	}
	return msgs
}

// record is conversation id's record in st; it fails t on an error.
func (e *env) record(st history.Store, id string) history.Conversation {
	e.t.Helper()
	c, err := st.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return c
}

// branching is a fresh store of s's, skipped unless it implements
// history.Brancher, with conversation id holding msgs.
func (s Subject) branching(t *testing.T, id string, msgs ...history.Message) *env {
	t.Helper()
	e := s.env(t)
	brancher(t, e.s)
	e.conversation(id)
	if err := e.s.Append(e.ctx, id, msgs...); err != nil {
		t.Fatal(err)
	}
	return e
}

// reads fails t unless each conversation of want reads its messages, in
// another opening, and its record shares truly (sharesTruly).
func (e *env) reads(when string, want map[string][]history.Message) {
	e.t.Helper()
	for id, msgs := range want {
		got := e.read(e.open(), id)
		if len(got) != len(msgs) {
			e.t.Fatalf("%s: %s reads %d messages; want %d", when, id, len(got), len(msgs))
		}
		sameMessages(e.t, got, msgs)
		e.sharesTruly(id)
	}
}

// fork makes c in e's first opening; it fails t on an error.
func (e *env) fork(c history.Conversation) history.Conversation {
	e.t.Helper()
	got, err := brancher(e.t, e.s).Fork(e.ctx, c)
	if err != nil {
		e.t.Fatalf("Fork(%s of %s at %d): %v", c.ID, c.Base, c.BaseAt, err)
	}
	return got
}

// sameBytes fails t unless got are want, each message's stored bytes
// (history.EncodeMessage: its time included) the same.
func sameBytes(t *testing.T, what string, got, want []history.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, err1 := history.EncodeMessage(got[i])
		w, err2 := history.EncodeMessage(want[i])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: encoding message %d: %v, %v", what, i, err1, err2)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: message %d is\n%s\nwant\n%s", what, i, g, w)
		}
	}
}

// join is the messages of each part, one after the other, in a new slice.
func join(parts ...[]history.Message) []history.Message {
	var out []history.Message
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// sharesTruly fails t unless what conversation id's record says it shares
// is so, in every opening of e's store given: its count is what it reads,
// and its Base (when set) holds at least BaseAt messages, whose bytes are
// id's first BaseAt. It is what every record must say after any fork,
// rewind or switch, whichever conversation a store names.
func (e *env) sharesTruly(ids ...string) {
	e.t.Helper()
	for _, st := range []history.Store{e.s, e.open()} {
		for _, id := range ids {
			r := e.record(st, id)
			msgs := e.read(st, id)
			if r.Messages != len(msgs) {
				e.t.Fatalf("Get(%s).Messages = %d, but it reads %d messages", id, r.Messages, len(msgs))
			}
			if r.Base == "" {
				if r.BaseAt != 0 {
					e.t.Fatalf("Get(%s) shares %d messages of no conversation (Base empty)", id, r.BaseAt)
				}
				continue
			}
			base := e.read(st, r.Base)
			if len(base) < r.BaseAt || r.BaseAt > len(msgs) {
				e.t.Fatalf("Get(%s) shares %d messages of %s, which holds %d (it reads %d)", id, r.BaseAt, r.Base, len(base), len(msgs))
			}
			sameBytes(e.t, fmt.Sprintf("the first %d messages of %s, as its base %s holds them", r.BaseAt, id, r.Base), msgs[:r.BaseAt], base[:r.BaseAt])
		}
	}
}

// namesItsBase fails t unless fork f, asked of base at at, is stored as
// every store names it: BaseAt at, and Base the conversation that keeps
// those messages — base, or, while the one reached shares them itself (at
// ≤ its BaseAt), the one it shares them with (Brancher.Fork).
func (e *env) namesItsBase(f history.Conversation, base string, at int) {
	e.t.Helper()
	if f.BaseAt != at {
		e.t.Fatalf("fork %s of %s at %d is stored with BaseAt %d", f.ID, base, at, f.BaseAt)
	}
	want := base
	for seen := 0; ; seen++ {
		r := e.record(e.s, want)
		if r.Base == "" || at > r.BaseAt || seen > 100 {
			break
		}
		want = r.Base
	}
	if f.Base != want {
		e.t.Fatalf("fork %s of %s at %d names base %q; want %q, the conversation that keeps those messages", f.ID, base, at, f.Base, want)
	}
}

// forkReadsBaseThenOwn: a fork at N, made anywhere from 0 to the base's
// end, reads the base's first N messages and then its own; its record
// says so, the base's system prompt included, in every opening; and a
// fork of a fork reads its own base's first messages the same way.
func forkReadsBaseThenOwn(t *testing.T, s Subject) {
	e := s.env(t)
	brancher(t, e.s)
	if err := e.s.Create(e.ctx, history.Conversation{ID: "b", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "b", WithRecords()...); err != nil {
		t.Fatal(err)
	}
	base := e.read(e.s, "b")
	for _, at := range []int{0, 3, len(base)} {
		id := fmt.Sprintf("f%d", at)
		system := ""
		if at == 3 {
			system = "be brief" // the base's, said again, is taken
		}
		f := e.fork(history.Conversation{ID: id, Base: "b", BaseAt: at, System: system})
		if f.ID != id || f.System != "be brief" || f.Messages != at || f.BranchOf != "" || f.Created.IsZero() {
			t.Fatalf("Fork(%s of b at %d) = %+v; want its id, b's system prompt, %d messages, no BranchOf, a creation time", id, at, f, at)
		}
		e.namesItsBase(f, "b", at)
		own := Numbered("own of "+id, 2)
		if err := e.s.Append(e.ctx, id, own...); err != nil {
			t.Fatalf("appending to fork %s: %v", id, err)
		}
		for name, st := range map[string]history.Store{"the forking opening": e.s, "another opening": e.open()} {
			got := e.record(st, id)
			if got.Base != f.Base || got.BaseAt != f.BaseAt || got.System != "be brief" || got.Messages != at+2 || got.BranchOf != "" {
				t.Fatalf("%s: Get(%s) = %+v; want Base %q, BaseAt %d as Fork returned, b's system prompt, %d messages", name, id, got, f.Base, f.BaseAt, at+2)
			}
			msgs := e.read(st, id)
			sameBytes(t, name+": the fork's first messages", msgs[:at], base[:at])
			sameMessages(t, msgs[at:], own)
		}
		e.sharesTruly(id)
	}
	// a fork of a fork: inside the first fork's own messages, and inside
	// the messages it shares
	f3 := e.read(e.s, "f3")
	for _, at := range []int{4, 2} {
		id := fmt.Sprintf("ff%d", at)
		ff := e.fork(history.Conversation{ID: id, Base: "f3", BaseAt: at})
		e.namesItsBase(ff, "f3", at)
		if ff.System != "be brief" {
			t.Fatalf("fork %s of a fork: System %q, want the first base's", id, ff.System)
		}
		sameBytes(t, "fork "+id+" of fork f3", e.read(e.open(), id), f3[:at])
		e.sharesTruly(id)
	}
}

// forkBytesAndRecords: at every point, a fork's messages are its base's
// byte for byte, the context records (settings, edits, summaries) among
// them exactly those stored before the point.
func forkBytesAndRecords(t *testing.T, s Subject) {
	e := s.branching(t, "b", WithRecords()...)
	base := e.read(e.s, "b")
	for at := 0; at <= len(base); at++ {
		id := fmt.Sprintf("f%d", at)
		e.fork(history.Conversation{ID: id, Base: "b", BaseAt: at})
		got := e.read(e.open(), id)
		sameBytes(t, fmt.Sprintf("fork %s at %d", id, at), got, base[:at])
		records, want := 0, 0
		for i, m := range base {
			if m.IsRecord() && i < at {
				want++
			}
		}
		for _, m := range got {
			if m.IsRecord() {
				records++
			}
		}
		if records != want {
			t.Fatalf("fork at %d holds %d context records; want %d, those before its point", at, records, want)
		}
	}
}

// forkAndBaseGoApart: what the base appends after a fork is not the
// fork's, and what the fork appends is not the base's.
func forkAndBaseGoApart(t *testing.T, s Subject) {
	first := Numbered("b", 4)
	e := s.branching(t, "b", first...)
	e.fork(history.Conversation{ID: "f", Base: "b", BaseAt: 3})
	e.fork(history.Conversation{ID: "g", Base: "b", BaseAt: 4})
	if err := e.s.Append(e.ctx, "b", Numbered("b after", 2)...); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "f", Numbered("f", 3)...); err != nil {
		t.Fatal(err)
	}
	if err := e.open().Append(e.ctx, "g", Numbered("g", 1)...); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]history.Store{"the forking opening": e.s, "another opening": e.open()} {
		t.Run(name, func(t *testing.T) {
			sameMessages(t, e.read(st, "b"), join(first, Numbered("b after", 2)))
			sameMessages(t, e.read(st, "f"), join(first[:3], Numbered("f", 3)))
			sameMessages(t, e.read(st, "g"), join(first, Numbered("g", 1)))
		})
	}
	e.sharesTruly("b", "f", "g")
}

// forkRefused: Fork refuses what no store may make, saying what is
// wrong, and makes nothing.
func forkRefused(t *testing.T, s Subject) {
	e := s.env(t)
	brancher(t, e.s)
	if err := e.s.Create(e.ctx, history.Conversation{ID: "b", System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "b", Numbered("b", 3)...); err != nil {
		t.Fatal(err)
	}
	e.conversation("taken")
	for _, tc := range []struct {
		name  string
		c     history.Conversation
		want  []string
		is    error
		maybe string // the id that must not be made
	}{
		{"an empty id", history.Conversation{Base: "b", BaseAt: 1}, []string{"id is empty"}, nil, ""},
		{"a taken id", history.Conversation{ID: "taken", Base: "b", BaseAt: 1}, []string{"taken"}, history.ErrExists, ""},
		{"its own id as its base", history.Conversation{ID: "b", Base: "b", BaseAt: 1}, []string{"b"}, nil, ""},
		{"no base", history.Conversation{ID: "f", BaseAt: 1}, []string{"f", "Base is empty"}, nil, "f"},
		{"an unknown base", history.Conversation{ID: "f", Base: "nowhere", BaseAt: 1}, []string{"nowhere"}, history.ErrNotFound, "f"},
		{"a point past the base's end", history.Conversation{ID: "f", Base: "b", BaseAt: 4}, []string{"b", "4", "holds 3"}, nil, "f"},
		{"a negative point", history.Conversation{ID: "f", Base: "b", BaseAt: -1}, []string{"b", "-1", "0 or more"}, nil, "f"},
		{"a BranchOf", history.Conversation{ID: "f", Base: "b", BaseAt: 1, BranchOf: "b"}, []string{"b", "not a branch"}, nil, "f"},
		{"another system prompt", history.Conversation{ID: "f", Base: "b", BaseAt: 1, System: "be long"}, []string{record.ForkSystem("f", "b").Error()}, nil, "f"},
		{"an unknown parent", history.Conversation{ID: "f", Base: "b", BaseAt: 1, Parent: "gone", ParentCall: "call_1"}, []string{"gone"}, history.ErrNotFound, "f"},
		{"a parent call without a parent", history.Conversation{ID: "f", Base: "b", BaseAt: 1, ParentCall: "call_1"}, []string{"call_1"}, nil, "f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := brancher(t, e.s).Fork(e.ctx, tc.c)
			if err == nil {
				t.Fatalf("Fork(%+v) made it; want it refused", tc.c)
			}
			for _, w := range tc.want {
				if !contains(err, w) {
					t.Errorf("Fork(%+v) = %v; want it to say %q", tc.c, err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Fork(%+v) = %v; want it to wrap %v", tc.c, err, tc.is)
			}
			if tc.is == nil && (errors.Is(err, history.ErrNotFound) || errors.Is(err, history.ErrExists)) {
				t.Errorf("Fork(%+v) = %v; a bad request, not a missing or taken conversation", tc.c, err)
			}
			if tc.maybe != "" {
				if _, err := e.open().Get(e.ctx, tc.maybe); !errors.Is(err, history.ErrNotFound) {
					t.Errorf("after the refused fork, Get(%s) = %v; want ErrNotFound", tc.maybe, err)
				}
			}
			if c := e.record(e.open(), "taken"); c.Base != "" || c.Messages != 0 {
				t.Errorf("after the refused fork, conversation taken is %+v; want it as made", c)
			}
			sameMessages(t, e.read(e.open(), "b"), Numbered("b", 3))
		})
	}
}

// forkNeedsNoClaim: a conversation another live writer holds forks all
// the same, under Writing of another holder too (the agent forks its own
// conversation under its claim), and the fork is made unclaimed.
func forkNeedsNoClaim(t *testing.T, s Subject) {
	e := s.branching(t, "b", Numbered("b", 3)...)
	owner, err := e.s.Claim(e.ctx, "b", elsewhere(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	e.fork(history.Conversation{ID: "f", Base: "b", BaseAt: 2})
	if _, err := brancher(t, e.s).Fork(history.Writing(e.ctx, history.NewHolder()), history.Conversation{ID: "g", Base: "b", BaseAt: 3}); err != nil {
		t.Fatalf("Fork under Writing of a holder that holds nothing: %v; a fork needs no claim", err)
	}
	for _, id := range []string{"f", "g"} {
		h, err := e.open().Claim(e.ctx, id, history.NewHolder(), history.DefaultLease)
		if err != nil {
			t.Fatalf("claiming the new fork %s: %v; want it made unclaimed", id, err)
		}
		if err := e.s.Append(history.Writing(e.ctx, h), id, UserText("mine")); err != nil {
			t.Fatalf("appending to fork %s under its own claim: %v", id, err)
		}
	}
	// the base's claim is as it was: its holder writes, no one else does
	if err := e.s.Append(e.ctx, "b", UserText("not the owner")); err == nil {
		t.Fatal("an append to the base outside its claim was taken after the forks")
	}
	if err := e.s.Append(history.Writing(e.ctx, owner), "b", UserText("the owner")); err != nil {
		t.Fatalf("the base's owner appending after the forks: %v", err)
	}
	sameMessages(t, e.read(e.s, "f"), join(Numbered("b", 2), []history.Message{UserText("mine")}))
}

// forkFiles: a fork reads the files (history.Blobs) of the conversation
// whose messages it shares: the messages name them.
func forkFiles(t *testing.T, s Subject) {
	e := s.branching(t, "b", SampleMessages()...)
	b := e.blobs(t, e.s)
	const path = ".myelin/tool-results/x.txt"
	hash, err := b.PutBlob(e.ctx, "b", path, []byte("the whole result"))
	if err != nil {
		t.Fatal(err)
	}
	e.fork(history.Conversation{ID: "f", Base: "b", BaseAt: 3})
	e.fork(history.Conversation{ID: "ff", Base: "f", BaseAt: 3})
	for _, id := range []string{"f", "ff"} {
		got, data, err := e.open().(history.Blobs).BlobAt(e.ctx, id, path)
		if err != nil || got != hash || string(data) != "the whole result" {
			t.Fatalf("BlobAt(%s, %s) = %s, %q, %v; want the base's file", id, path, got, data, err)
		}
	}
	if _, _, err := b.BlobAt(e.ctx, "f", ".myelin/tool-results/none.txt"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("BlobAt of a file neither the fork nor its base keeps: %v; want ErrNotFound", err)
	}
}

// forkDamaged: a fork's record whose point was changed behind the store's
// back is reported, not read as other messages.
func forkDamaged(t *testing.T, s Subject) {
	if s.Damage == nil {
		t.Skip("the store has no tables to damage")
	}
	e := s.branching(t, "b", Numbered("b", 3)...)
	e.fork(history.Conversation{ID: "f", Base: "b", BaseAt: 2})
	s.Damage(t, e.s, `UPDATE conversations SET base_at = base_at - 1 WHERE id = 'f'`)
	other := e.open()
	if _, err := other.Get(e.ctx, "f"); !errors.Is(err, history.ErrDamaged) || !contains(err, "f") {
		t.Errorf("Get of a fork whose point changed: %v; want ErrDamaged naming it", err)
	}
	if msgs, err := other.Messages(e.ctx, "f"); !errors.Is(err, history.ErrDamaged) || !contains(err, "f") {
		t.Errorf("Messages of a fork whose point changed: %d messages, %v; want ErrDamaged naming it", len(msgs), err)
	}
}
