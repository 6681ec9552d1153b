package sqlite

import (
	"context"
	"testing"
)

// A Marked read that ends after this store's writer rewound the
// conversation and appended to it again keeps what it read only as a
// read (checked again by the next one), not as the writer's own: the
// writer's next Marked, which takes its own kept messages without a
// query, must not get the rows the rewind took away (a review of the
// readconn branch, where the read's window is its whole length; on one
// connection it is the moment between the read's transaction and its
// keep).
func TestAReadKeptAfterTheWritersRewindIsNotHandedToTheWriterUnchecked(t *testing.T) {
	for _, moment := range []struct {
		name string
		hold func(rewind func()) // runs rewind at that moment of the other caller's Marked
	}{
		// between its read's transaction and its keep
		{"after its read", func(rewind func()) {
			t.Cleanup(func() { afterMarkedRead = nil })
			afterMarkedRead = func(string) { afterMarkedRead = nil; rewind() }
		}},
		// inside its read transaction, after its record's statement (on a
		// reader, its snapshot taken: the read's window is its whole
		// length)
		{"within its read", func(rewind func()) {
			t.Cleanup(func() { whileMarking = nil })
			whileMarking = func(string) { whileMarking = nil; rewind() }
		}},
	} {
		t.Run(moment.name, func(t *testing.T) {
			ctx := context.Background()
			s, w := freshWriter(t, 3)
			moment.hold(func() {
				if _, err := s.Rewind(w, "c", 5); err != nil {
					t.Error(err)
				}
				if m, err := s.Messages(w, "c"); err != nil || len(m) != 5 {
					t.Errorf("c after its rewind: %d messages, %v", len(m), err)
				}
				if err := s.Append(w, "c", userText("n5"), userText("n6"), userText("n7")); err != nil {
					t.Error(err)
				}
			})
			if _, _, err := s.Marked(ctx, "c"); err != nil { // another caller's, ended after the writes
				t.Fatal(err)
			}
			markedAsAfresh(t, s, w, "c")
		})
	}
}

// markedAsAfresh fails t unless the Marked of conversation id that s
// gives the writer of ctx w is the mark and messages a store opened
// afresh on s's file reads.
func markedAsAfresh(t *testing.T, s *Store, w context.Context, id string) {
	t.Helper()
	fm, fmsgs, err := openStore(t, s.path).Marked(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	mk, m, err := s.Marked(w, id)
	if err != nil {
		t.Fatal(err)
	}
	if mk.From != fm.From || texts(m) != texts(fmsgs) {
		t.Fatalf("%s's writer's Marked: mark at %d, %s; a store opened afresh: mark at %d, %s", id, mk.From, texts(m), fm.From, texts(fmsgs))
	}
}
