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
