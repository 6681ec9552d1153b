package sqlite

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// A read whole of a fork reads its record, the messages it shares with
// its base and its own rows in one read transaction, so that what it
// returns is the fork at one moment. Fork f (no rows of its own) shares
// the first 8 messages of c. Another opening (another process; here at
// the points between the read's statements, whileReading) rewinds c to 5
// and appends 3 others after f's record is read (f is then pointed at
// c~1, which keeps the old 8), and switches c back to c~1 after c's
// messages are read (f points at c again, whose row 8 is the old one,
// under the same checksum). Read in three snapshots the tags compared
// equal and f was returned — and kept — as c's messages in between,
// m0…m4 n5 n6 n7, which f never held (the review of merge 3c31bae).
func TestAForkReadWholeIsOneMomentWhileItsBaseIsRewoundAndSwitchedBack(t *testing.T) {
	path := markedStore(t, 10, 0)
	ctx := context.Background()
	w := openStore(t, path)
	makeConv(t, w, "f", "c", 8, "", 8)
	want := texts(readAll(t, w, "f"))
	r := openStore(t, path)
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		switch {
		case id == "f" && point == "record":
			if _, err := w.Rewind(ctx, "c", 5); err != nil {
				t.Error(err)
			}
			if err := w.Append(ctx, "c", userText("n5"), userText("n6"), userText("n7")); err != nil {
				t.Error(err)
			}
		case id == "f" && point == "base":
			whileReading = nil
			if err := w.Switch(ctx, "c", "c~1"); err != nil {
				t.Error(err)
			}
		}
	}
	got, err := r.Messages(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if whileReading != nil {
		t.Fatal("the read whole of f did not read its base between its record and its rows")
	}
	if now := texts(readAll(t, openStore(t, path), "f")); now != want {
		t.Fatalf("setup: f now holds %s, before %s", now, want)
	}
	if texts(got) != want {
		t.Fatalf("f was read as %s; it held %s before and after", texts(got), want)
	}
	if again := texts(readAll(t, r, "f")); again != want {
		t.Fatalf("f's next read, nothing changed since, gave %s (what the first read kept); it holds %s", again, want)
	}
}

// readAll is s's Messages of conversation id, which must not fail.
func readAll(t *testing.T, s *Store, id string) []history.Message {
	t.Helper()
	m, err := s.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
