package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// deleter is s as history.Deleter; it skips t for a store that deletes
// nothing.
func deleter(t *testing.T, s history.Store) history.Deleter {
	t.Helper()
	d, ok := s.(history.Deleter)
	if !ok {
		t.Skip("the store deletes no conversation")
	}
	return d
}

// deleteRemovesAllOfIt: a deleted conversation's record, messages, kept
// results, requests and files are gone — for another opening too — and
// the conversation beside it, its files' bytes included where they are
// the same, reads as before, not as damaged; one made again under the
// id starts empty.
func deleteRemovesAllOfIt(t *testing.T, s Subject) {
	e := s.env(t)
	d := deleter(t, e.s)
	e.conversation("gone")
	e.conversation("kept")
	for _, id := range []string{"gone", "kept"} {
		if err := e.s.Append(e.ctx, id, SampleMessages()...); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.Keep(e.ctx, "gone", history.Part{Type: history.ToolResultPart, CallID: "call_k", Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	reqs, hasRequests := e.s.(history.Requests)
	if hasRequests {
		for _, id := range []string{"gone", "kept", "gone"} {
			if _, err := reqs.AddRequest(e.ctx, id, history.SentRequest{Body: []byte(`{"n":"` + id + `"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	blobs, hasBlobs := e.s.(history.Blobs)
	const path = ".myelin/tool-results/x.txt"
	var shared, only string
	if hasBlobs {
		var err error
		if shared, err = blobs.PutBlob(e.ctx, "gone", path, []byte("both have these bytes")); err != nil {
			t.Fatal(err)
		}
		if _, err = blobs.PutBlob(e.ctx, "kept", path, []byte("both have these bytes")); err != nil {
			t.Fatal(err)
		}
		if only, err = blobs.PutBlob(e.ctx, "gone", ".myelin/tool-results/y.txt", []byte("only gone has these")); err != nil {
			t.Fatal(err)
		}
	}
	// read before by both: what a store remembers of it must go too
	other := e.open()
	for _, st := range []history.Store{e.s, other} {
		if _, err := st.Messages(e.ctx, "gone"); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Delete(e.ctx, "gone"); err != nil {
		t.Fatalf("Delete(gone): %v", err)
	}
	for name, st := range map[string]history.Store{"the deleting opening": e.s, "another opening": other} {
		if _, err := st.Get(e.ctx, "gone"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("%s: Get of the deleted conversation: %v; want ErrNotFound", name, err)
		}
		if msgs, err := st.Messages(e.ctx, "gone"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("%s: Messages of the deleted conversation: %d, %v; want ErrNotFound", name, len(msgs), err)
		}
		if kept, _ := st.Kept(e.ctx, "gone"); len(kept) != 0 {
			t.Errorf("%s: the deleted conversation still has %d kept result(s)", name, len(kept))
		}
		list, err := st.List(e.ctx)
		if err != nil || len(list) != 1 || list[0].ID != "kept" || list[0].Messages != len(SampleMessages()) {
			t.Fatalf("%s: List after the delete = %+v, %v; want conversation kept alone, whole", name, list, err)
		}
		msgs, err := st.Messages(e.ctx, "kept")
		if err != nil {
			t.Fatalf("%s: the conversation beside the deleted one: %v", name, err)
		}
		sameMessages(t, msgs, SampleMessages())
		if r, ok := st.(history.Requests); ok && hasRequests {
			if _, err := r.RequestCount(e.ctx, "gone"); !errors.Is(err, history.ErrNotFound) {
				t.Errorf("%s: RequestCount of the deleted conversation: %v; want ErrNotFound", name, err)
			}
			if got, err := r.Request(e.ctx, "kept", 1); err != nil || string(got.Body) != `{"n":"kept"}` {
				t.Errorf("%s: the other conversation's request: %q, %v", name, got.Body, err)
			}
		}
		if b, ok := st.(history.Blobs); ok && hasBlobs {
			if _, _, err := b.BlobAt(e.ctx, "gone", path); !errors.Is(err, history.ErrNotFound) {
				t.Errorf("%s: a file of the deleted conversation: %v; want ErrNotFound", name, err)
			}
			if _, err := b.BlobByHash(e.ctx, only); !errors.Is(err, history.ErrNotFound) {
				t.Errorf("%s: the bytes only the deleted conversation had: %v; want them gone (ErrNotFound)", name, err)
			}
			if data, err := b.BlobByHash(e.ctx, shared); err != nil || string(data) != "both have these bytes" {
				t.Errorf("%s: the bytes the other conversation has too: %q, %v; want them kept", name, data, err)
			}
			if _, data, err := b.BlobAt(e.ctx, "kept", path); err != nil || string(data) != "both have these bytes" {
				t.Errorf("%s: the other conversation's file: %q, %v", name, data, err)
			}
		}
	}
	if err := d.Delete(e.ctx, "gone"); !errors.Is(err, history.ErrNotFound) || !contains(err, "gone") {
		t.Errorf("deleting it again: %v; want ErrNotFound naming it", err)
	}
	// the id is free again, and what was read of the old one is not read back
	e.conversation("gone")
	if msgs, err := e.s.Messages(e.ctx, "gone"); err != nil || len(msgs) != 0 {
		t.Errorf("a conversation made again under the deleted id: %d messages, %v; want none", len(msgs), err)
	}
	if hasRequests {
		if n, err := reqs.RequestCount(e.ctx, "gone"); err != nil || n != 0 {
			t.Errorf("a conversation made again under the deleted id: %d requests, %v; want none", n, err)
		}
	}
}

// deleteUnknown: deleting what is not there is ErrNotFound, naming it.
func deleteUnknown(t *testing.T, s Subject) {
	e := s.env(t)
	err := deleter(t, e.s).Delete(e.ctx, "nowhere")
	if !errors.Is(err, history.ErrNotFound) || !contains(err, "nowhere") {
		t.Fatalf("Delete(nowhere) = %v; want ErrNotFound naming it", err)
	}
}

// deleteRefusedWhileHeld: a live holder's claim refuses the delete
// (HeldError naming the holder) and nothing goes; a claim run out, or the
// delete of the holder itself (under Writing), does not; a writer whose
// claim was lost deletes nothing.
func deleteRefusedWhileHeld(t *testing.T, s Subject) {
	e := s.env(t)
	d := deleter(t, e.s)
	e.conversation("c")
	if err := e.s.Append(e.ctx, "c", UserText("hello")); err != nil {
		t.Fatal(err)
	}
	holder, err := e.s.Claim(e.ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Delete(e.ctx, "c")
	var held *history.HeldError
	if !errors.As(err, &held) || held.Holder.Token != holder.Token || held.Conversation != "c" {
		t.Fatalf("Delete while another host holds the claim: %v; want a HeldError naming it", err)
	}
	if c, err := e.s.Get(e.ctx, "c"); err != nil || c.Messages != 1 {
		t.Fatalf("after the refused delete: %+v, %v; want the conversation as it was", c, err)
	}
	if err := d.Delete(history.Writing(e.ctx, history.NewHolder()), "c"); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("Delete by a writer not holding the claim: %v; want ErrClaimLost", err)
	}
	if err := d.Delete(history.Writing(e.ctx, holder), "c"); err != nil {
		t.Fatalf("Delete by the claim's holder itself: %v", err)
	}
	if _, err := e.s.Get(e.ctx, "c"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("after its holder deleted it: %v; want ErrNotFound", err)
	}
	// a claim whose lease ran out holds nothing back
	e.conversation("late")
	if _, err := e.s.Claim(e.ctx, "late", elsewhere(), time.Minute); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(61 * time.Second)
	if err := d.Delete(e.ctx, "late"); err != nil {
		t.Fatalf("Delete after the holder's lease ran out: %v", err)
	}
	// the claim went with it: the id made again is free to claim
	e.conversation("late")
	if _, err := e.s.Claim(e.ctx, "late", history.NewHolder(), time.Minute); err != nil {
		t.Fatalf("claiming a conversation made again under a deleted id: %v", err)
	}
}

// deleteLeavesFamily: deleting a parent leaves its children, whole and
// still naming it; deleting a child leaves its parent.
func deleteLeavesFamily(t *testing.T, s Subject) {
	e := s.env(t)
	d := deleter(t, e.s)
	e.conversation("p")
	for _, c := range []history.Conversation{
		{ID: "c1", Parent: "p", ParentCall: "call_1"},
		{ID: "c2", Parent: "p", ParentCall: "call_2"},
	} {
		e.clock.Add(time.Second)
		if err := e.s.Create(e.ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Append(e.ctx, c.ID, UserText("child "+c.ID)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Delete(e.ctx, "c1"); err != nil {
		t.Fatalf("Delete(c1): %v", err)
	}
	kids, err := history.Children(e.ctx, e.s, "p")
	if err != nil || len(kids) != 1 || kids[0].ID != "c2" {
		t.Fatalf("Children(p) after its child c1 was deleted = %+v, %v; want c2 alone", kids, err)
	}
	if err := d.Delete(e.ctx, "p"); err != nil {
		t.Fatalf("Delete(p): %v", err)
	}
	other := e.open()
	c2, err := other.Get(e.ctx, "c2")
	if err != nil || c2.Parent != "p" || c2.ParentCall != "call_2" || c2.Messages != 1 {
		t.Fatalf("the child after its parent was deleted: %+v, %v; want it whole, naming parent p", c2, err)
	}
	if list, err := other.List(e.ctx); err != nil || len(list) != 1 {
		t.Fatalf("List after the deletes = %+v, %v; want c2 alone", list, err)
	}
}
