package storetest

import (
	"testing"

	"github.com/myelin-run/myelin/history"
)

// Texts a store keeps are bytes, not the database's idea of text: a
// system prompt read from a Latin-1 file, a NUL in a prompt, a tool's
// output or a call id come back as stored — the record's checksum covers
// them, and a request built from them must be the same from every store
// (contract §7). Where the message encoding (result.JSON) replaces bytes
// that are not UTF-8, every store keeps what it made, and a NUL stays.
func textsOfAnyBytes(t *testing.T, s Subject) {
	e := s.env(t)
	system := "be brief\x00 in Latin-1: caf\xe9"
	if err := e.s.Create(e.ctx, history.Conversation{ID: "c", System: system}); err != nil {
		t.Fatalf("creating a conversation whose system prompt holds a NUL and a byte that is not UTF-8: %v", err)
	}
	other := e.open()
	if c, err := other.Get(e.ctx, "c"); err != nil || c.System != system {
		t.Fatalf("Get = %q, %v; want the system prompt %q", c.System, err, system)
	}
	msg := UserText("a NUL\x00 in a prompt")
	if err := e.s.Append(e.ctx, "c", msg); err != nil {
		t.Fatal(err)
	}
	got, err := other.Messages(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, got, []history.Message{msg})
	kept := history.Part{Type: history.ToolResultPart, CallID: "call\x001", Text: "output\x00with a NUL"}
	if err := e.s.Keep(e.ctx, "c", kept); err != nil {
		t.Fatalf("keeping a result whose call id and text hold a NUL: %v", err)
	}
	if ks, err := other.Kept(e.ctx, "c"); err != nil || len(ks) != 1 || ks[0].CallID != kept.CallID || ks[0].Text != kept.Text {
		t.Fatalf("Kept = %+v, %v; want %+v", ks, err, kept)
	}
}

// The messages Messages returns may be extended by the caller without
// reaching the store's: a caller's append to the slice copies (no room
// past its end), and a slice returned before is not changed by the reads
// and appends after it.
func messagesAreTheCallers(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	if err := e.s.Append(e.ctx, "c", UserText("one"), UserText("two")); err != nil {
		t.Fatal(err)
	}
	first, err := e.s.Messages(e.ctx, "c")
	if err != nil || len(first) != 2 {
		t.Fatalf("%d messages, %v", len(first), err)
	}
	mine := append(first, UserText("mine"))
	mine[0] = UserText("changed")
	for round := range 3 {
		if err := e.s.Append(e.ctx, "c", UserText("more")); err != nil {
			t.Fatal(err)
		}
		again, err := e.s.Messages(e.ctx, "c")
		if err != nil || len(again) != 3+round {
			t.Fatalf("round %d: %d messages, %v", round, len(again), err)
		}
		if again[0].Parts[0].Text != "one" || again[2].Parts[0].Text != "more" {
			t.Fatalf("round %d: a caller's append to its slice reached the store: %q, %q", round, again[0].Parts[0].Text, again[2].Parts[0].Text)
		}
		if len(first) != 2 || first[0].Parts[0].Text != "one" || first[1].Parts[0].Text != "two" {
			t.Fatalf("round %d: the slice returned first changed: %+v", round, first)
		}
	}
}
