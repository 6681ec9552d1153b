package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// These tests pin that a read gives a conversation at one moment when
// another process rewrites it while it reads: reads of one opening that
// overtake each other (remember), and a fork read through its base while
// the base is rewound below the fork's point and switched back.

func momentText(s string) history.Message {
	return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

func momentNumbered(prefix string, from, to int) []history.Message {
	var out []history.Message
	for i := from; i < to; i++ {
		out = append(out, momentText(fmt.Sprint(prefix, i)))
	}
	return out
}

func momentTexts(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// A Marked of one opening (G1, markedKnown run step by step) reads the
// rows added since what it kept; before it keeps them, another process
// rewinds the conversation and writes it again to the same length and
// marks it at the same place, and another Marked of the same opening
// (G2) keeps that moment, of the same link, place and length. G1 must
// give what its own statement read, not its rows glued onto G2's list.
func TestAMarkedOvertakenByAReadOfARewrittenConversationGivesItsOwnMoment(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	a, w := openBlobStore(t, dsn), openBlobStore(t, dsn)
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("m", 0, 10)...); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMark(ctx, "c", history.Mark{From: 7, Facts: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Marked(ctx, "c"); err != nil { // a keeps from 6: m6..m9
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("m", 10, 13)...); err != nil {
		t.Fatal(err)
	}

	// G1: markedKnown up to its remember
	a.mu.Lock()
	known := a.read["c"]
	a.mu.Unlock()
	n := known.end()
	var b rowdecode.Batches
	own, k, err := a.markedRows(ctx, "c", n, false, known.mark.stamp, &b, n+1)
	if err != nil {
		t.Fatal(err)
	}
	rows := own.rows
	if !(own.base == known.base && own.baseAt == known.baseAt && len(rows) > 0 && rows[0].Seq == n && rows[0].CRC == known.lastCRC) {
		t.Fatal("G1's read is not valid: the test is wrong")
	}
	rows = rows[1:]
	seen, err := a.mark("c", own.count, k, known.mark)
	if err != nil {
		t.Fatal(err)
	}
	fresh, last, err := a.decodeRows("c", n+1, own, rows, &b)
	b.Stop()
	if err != nil {
		t.Fatal(err)
	}

	// meanwhile: another process rewinds c to 5, writes it to 10 again
	// and marks it at the same place; G2 reads it in the same opening
	if _, err := w.Rewind(ctx, "c", 5); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("x", 5, 10)...); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMark(ctx, "c", history.Mark{From: 7, Facts: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	if m, tail, err := a.Marked(ctx, "c"); err != nil || string(m.Facts) != "new" || !slices.Equal(momentTexts(tail), []string{"x7", "x8", "x9"}) {
		t.Fatalf("G2: %q %q %v", m.Facts, momentTexts(tail), err)
	}

	// G1 ends as markedKnown does
	known.mark = seen
	all := a.remember("c", known, fresh, last)
	tail := all[seen.mark.From-known.from:]
	want := []string{"m7", "m8", "m9", "m10", "m11", "m12"} // what G1's statement read: one moment
	if got := momentTexts(tail); !slices.Equal(got, want) {
		t.Errorf("G1's Marked gives mark %q with %q; want %q (the conversation at one moment)", seen.mark.Facts, got, want)
	}
	// and the opening's next read gives the conversation as it is now
	if m, tail, err := a.Marked(ctx, "c"); err != nil || string(m.Facts) != "new" || !slices.Equal(momentTexts(tail), []string{"x7", "x8", "x9"}) {
		t.Errorf("the next Marked: %q %q %v; want \"new\", [x7 x8 x9]", m.Facts, momentTexts(tail), err)
	}
}

// The same with Messages: G1 (Messages' warm read, step by step) must
// give the first 13 messages it read, not the rewritten conversation's
// first 10 followed by the old one's rows 11 to 13.
func TestMessagesOvertakenByAReadOfARewrittenConversationGivesItsOwnMoment(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	a, w := openBlobStore(t, dsn), openBlobStore(t, dsn)
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("m", 0, 10)...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("m", 10, 13)...); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	known := a.read["c"]
	a.mu.Unlock()
	n := len(known.msgs)
	var b rowdecode.Batches
	own, err := a.ownRows(ctx, "c", n, noEnd, &b, n+1)
	if err != nil {
		t.Fatal(err)
	}
	fresh, last, err := a.decodeRows("c", n+1, own, own.rows[1:], &b)
	b.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rewind(ctx, "c", 5); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("x", 5, 10)...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got := momentTexts(a.remember("c", known, fresh, last))
	if want := momentTexts(momentNumbered("m", 0, 13)); !slices.Equal(got, want) {
		t.Errorf("G1's Messages gives %q; want %q", got, want)
	}
	want := append(momentTexts(momentNumbered("m", 0, 5)), momentTexts(momentNumbered("x", 5, 10))...)
	if msgs, err := a.Messages(ctx, "c"); err != nil || !slices.Equal(momentTexts(msgs), want) {
		t.Errorf("the next Messages: %q, %v; want %q", momentTexts(msgs), err, want)
	}
}

// abaFork is a store where conversation c holds c0..c7 and fork f shares
// its first 6 and holds f6..f8, marked at 2; and w, another opening, that
// pausedInRead makes rewind c to 4 and write written messages to it while
// a read of f is about to read through its base, then switch c back once
// that read is done — once, for the first such read of f. f's messages
// are the same throughout, at every moment.
func abaFork(t *testing.T, written int) (dsn string, want []string) {
	return abaForkEvery(t, written, false)
}

// abaForkEvery is abaFork, rewinding and switching c back around every
// read of f through its base when every is set.
func abaForkEvery(t *testing.T, written int, every bool) (dsn string, want []string) {
	t.Helper()
	ctx := context.Background()
	_, dsn = blobSchema(t)
	w := openBlobStore(t, dsn)
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "c", momentNumbered("c", 0, 8)...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 6}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, "f", momentNumbered("f", 6, 9)...); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMark(ctx, "f", history.Mark{From: 2, Facts: []byte("f's")}); err != nil {
		t.Fatal(err)
	}
	var branch string
	step := 0
	pausedInRead = func(id string, done bool) {
		switch {
		case id != "f":
		case step == 0 && !done:
			step++
			br, err := w.Rewind(ctx, "c", 4)
			if err != nil {
				t.Error(err)
				return
			}
			branch = br.ID
			if written > 0 {
				if err := w.Append(ctx, "c", momentNumbered("new", 4, 4+written)...); err != nil {
					t.Error(err)
				}
			}
		case step == 1 && done:
			step++
			if every {
				step = 0
			}
			if err := w.Switch(ctx, "c", branch); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { pausedInRead = nil })
	return dsn, append(momentTexts(momentNumbered("c", 0, 6)), momentTexts(momentNumbered("f", 6, 9))...)
}

// A fork read through its base while the base is rewound below the
// fork's point, written (past the point, or not at all) and switched
// back — the fork's link moved away and back as it was — gives the
// fork's messages: not the base's new ones, not ErrDamaged; and what its
// opening keeps of it is those messages too.
func TestAForkReadWhileItsBaseIsRewoundAndSwitchedBackGivesItsMessages(t *testing.T) {
	ctx := context.Background()
	reads := []struct {
		name string
		read func(s *Store) ([]string, error)
		want func(all []string) []string
	}{
		{"Marked", func(s *Store) ([]string, error) {
			m, msgs, err := s.Marked(ctx, "f")
			if err == nil && (m.From != 2 || string(m.Facts) != "f's") {
				err = fmt.Errorf("the mark is from %d (%q); want from 2 (\"f's\")", m.From, m.Facts)
			}
			return momentTexts(msgs), err
		}, func(all []string) []string { return all[2:] }},
		{"Messages", func(s *Store) ([]string, error) {
			msgs, err := s.Messages(ctx, "f")
			return momentTexts(msgs), err
		}, func(all []string) []string { return all }},
		{"MessagesBetween", func(s *Store) ([]string, error) {
			msgs, err := s.MessagesBetween(ctx, "f", 1, 8)
			return momentTexts(msgs), err
		}, func(all []string) []string { return all[1:8] }},
	}
	for _, r := range reads {
		for _, written := range []int{2, 0} {
			t.Run(fmt.Sprintf("%s, %d written", r.name, written), func(t *testing.T) {
				dsn, all := abaFork(t, written)
				s := openBlobStore(t, dsn)
				want := r.want(all)
				got, err := r.read(s)
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("%s(f) = %q, %v; want %q", r.name, got, err, want)
				}
				pausedInRead = nil
				if got, err := r.read(s); err != nil || !slices.Equal(got, want) {
					t.Errorf("%s(f) again, nothing changing: %q, %v; want %q", r.name, got, err, want)
				}
			})
		}
	}
}

// A fork's read that finds its base short must see whether the fork was
// rewound meanwhile before it calls that damage: when that second look
// fails (here the caller's context is cancelled), the read says so and
// wraps its cause, and does not report ErrDamaged.
func TestAForkReadWhoseSecondLookFailsSaysWhyNotDamage(t *testing.T) {
	reads := []struct {
		name string
		read func(ctx context.Context, s *Store) error
	}{
		{"Marked", func(ctx context.Context, s *Store) error { _, _, err := s.Marked(ctx, "f"); return err }},
		{"Messages", func(ctx context.Context, s *Store) error { _, err := s.Messages(ctx, "f"); return err }},
		{"MessagesBetween", func(ctx context.Context, s *Store) error { _, err := s.MessagesBetween(ctx, "f", 1, 8); return err }},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			dsn, _ := abaFork(t, 0)
			s := openBlobStore(t, dsn)
			rewind := pausedInRead
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pausedInRead = func(id string, done bool) {
				if !done {
					rewind(id, done) // c rewound to 4: the base read comes out short
					return
				}
				cancel() // and the fork's record cannot be read again
			}
			err := r.read(ctx, s)
			if !errors.Is(err, context.Canceled) || errors.Is(err, history.ErrDamaged) {
				t.Errorf("%s(f) with its second look cancelled: %v; want an error wrapping context.Canceled, not ErrDamaged", r.name, err)
			}
		})
	}
}

// A fork read through its base while, around every pass of the read, its
// base is rewound below its point and switched back, or the fork is
// written to (a writer appending to it as it is read): each pass finds
// its record written meanwhile, and the last reads in one snapshot, so
// the read gives the fork at one moment rather than giving up.
func TestAForkReadWhoseRecordIsWrittenInEveryPassGivesOneMoment(t *testing.T) {
	ctx := context.Background()
	reads := []struct {
		name string
		read func(s *Store) ([]string, error)
		from int
	}{
		{"Marked", func(s *Store) ([]string, error) {
			_, msgs, err := s.Marked(ctx, "f")
			return momentTexts(msgs), err
		}, 2},
		{"Messages", func(s *Store) ([]string, error) {
			msgs, err := s.Messages(ctx, "f")
			return momentTexts(msgs), err
		}, 0},
		{"MessagesBetween", func(s *Store) ([]string, error) {
			msgs, err := s.MessagesBetween(ctx, "f", 1, 100)
			return momentTexts(msgs), err
		}, 1},
	}
	for _, r := range reads {
		for _, appends := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, appended to %v", r.name, appends), func(t *testing.T) {
				dsn, all := abaForkEvery(t, 2, true)
				if appends {
					w := openBlobStore(t, dsn)
					pausedInRead = func(id string, done bool) {
						if id == "f" && done {
							if err := w.Append(ctx, "f", momentText("w")); err != nil {
								t.Error(err)
							}
						}
					}
				}
				s := openBlobStore(t, dsn)
				passes := 0
				hook := pausedInRead
				pausedInRead = func(id string, done bool) {
					if id == "f" && !done {
						passes++
					}
					hook(id, done)
				}
				got, err := r.read(s)
				if err != nil {
					t.Fatalf("%s(f): %v", r.name, err)
				}
				want := all[r.from:]
				if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
					t.Fatalf("%s(f) = %q; want %q then the messages appended", r.name, got, want)
				}
				for _, m := range got[len(want):] {
					if m != "w" {
						t.Fatalf("%s(f) = %q; want %q then the messages appended", r.name, got, want)
					}
				}
				if passes != 3 {
					t.Errorf("%s(f) read through the base %d times; want 3 (two passes, then one in a snapshot)", r.name, passes)
				}
			})
		}
	}
}
