package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// markedForest is a forest whose conversations carry marks too: what
// Marked must read of each, in every opening.
type markedForest struct {
	*forest
	marks map[string]history.Mark
}

// setMark marks id from place from with facts of its own.
func (f *markedForest) setMark(id string, from int) {
	f.t.Helper()
	m := history.Mark{From: from}
	if from > 0 {
		m.Facts = fmt.Appendf(nil, "facts of %s from %d\x00\xff", id, from)
	}
	if err := f.s.SetMark(f.ctx, id, m); err != nil {
		f.t.Fatalf("SetMark(%s, from %d): %v", id, from, err)
	}
	f.marks[id] = m
}

// checkMarked reads every conversation through Marked in the openings
// given (and, now and then, through Messages first, which a reader may
// do between its marked reads), against the marks and messages they
// must hold.
func (f *markedForest) checkMarked(step string, rng *rand.Rand, openings map[string]*postgres.Store) {
	f.t.Helper()
	for name, st := range openings {
		for id, want := range f.want {
			if rng.IntN(4) == 0 {
				msgs, err := st.Messages(f.ctx, id)
				if err != nil || !slices.Equal(storetest.Texts(msgs), want) {
					f.t.Fatalf("after %s, %s: Messages(%s) reads %q, %v; want %q", step, name, id, storetest.Texts(msgs), err, want)
				}
			}
			m, msgs, err := st.Marked(f.ctx, id)
			if err != nil {
				f.t.Fatalf("after %s, %s: Marked(%s): %v", step, name, id, err)
			}
			wm := f.marks[id]
			if m.From != wm.From || !bytes.Equal(m.Facts, wm.Facts) {
				f.t.Fatalf("after %s, %s: Marked(%s) gives the mark from %d (%q); want from %d (%q)", step, name, id, m.From, m.Facts, wm.From, wm.Facts)
			}
			if got := storetest.Texts(msgs); !slices.Equal(got, want[wm.From:]) {
				f.t.Fatalf("after %s, %s: Marked(%s) reads %q; want %q", step, name, id, got, want[wm.From:])
			}
		}
	}
}

// Marks set, appends, forks, rewinds and switches in any order leave
// every conversation's Marked reading its mark (dropped by a rewind or
// switch of it, none on a fork or branch) and its messages from there,
// in every opening: the writer, one that read every conversation before
// each step and keeps what it read (from a mark on, or whole after a
// Messages), and a new one.
func TestMarksThroughForksRewindsAndSwitchesInAnyOrder(t *testing.T) {
	f := &markedForest{forest: newForest(t), marks: map[string]history.Mark{}}
	f.create("root", 6)
	rng := rand.New(rand.NewPCG(34, 2))
	for step := range 120 {
		ids := make([]string, 0, len(f.want))
		for id := range f.want {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		id := ids[rng.IntN(len(ids))]
		n := len(f.want[id])
		var what string
		switch op := rng.IntN(12); {
		case op < 3:
			f.append(id, 1+rng.IntN(3))
			what = "append to " + id
		case op < 6:
			from := rng.IntN(n + 1)
			if rng.IntN(3) > 0 {
				from = n - rng.IntN(min(n, 2)+1) // near the end, as the agent's mark
			}
			f.setMark(id, from)
			what = fmt.Sprintf("a mark of %s from %d", id, from)
		case op < 7:
			at := rng.IntN(n + 1)
			fid := fmt.Sprintf("f%d", step)
			f.fork(fid, id, at)
			what = fmt.Sprintf("fork of %s at %d", id, at)
		case op < 9 && n > 0:
			at := rng.IntN(n)
			b := f.rewind(id, at)
			delete(f.marks, id)
			what = fmt.Sprintf("rewind of %s to %d (branch %s)", id, at, b)
		case len(f.branches[id]) > 0:
			b := f.branches[id][rng.IntN(len(f.branches[id]))]
			f.switchTo(id, b)
			delete(f.marks, id)
			delete(f.marks, b)
			what = fmt.Sprintf("switch of %s to %s", id, b)
		default:
			continue
		}
		after := fmt.Sprintf("step %d (%s)", step, what)
		openings := map[string]*postgres.Store{"the writer": f.s, "a reader": f.reader}
		if rng.IntN(6) == 0 {
			openings["a new opening"] = f.open()
		}
		f.checkMarked(after, rng, openings)
	}
	f.check("the last step")
}

// A fresh opening's Marked reads the mark and the rows from the one
// before the mark's first message on, none before: a row damaged before
// it is not read (Messages, which reads it, reports it), and the row
// just before it is (it is what the next read checks the kept tail
// by). It keeps them: its next Marked reads only the rows added since
// (one damaged in the tail already read is not read again), and a
// Messages of that opening still reads every message.
func TestAFreshMarkedReadsOnlyFromItsMarkAndKeepsWhatItRead(t *testing.T) {
	ctx := context.Background()
	open, name := opener(t, nil)
	s := open()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("m", 20)...); err != nil {
		t.Fatal(err)
	}
	want := storetest.Texts(readAll(t, open(), "c"))
	mark := history.Mark{From: 15, Facts: []byte("before 15")}
	if err := s.SetMark(ctx, "c", mark); err != nil {
		t.Fatal(err)
	}
	damage := func(seq int) {
		t.Helper()
		exec(t, name, `UPDATE messages SET message = message || ' '::bytea WHERE conversation = 'c' AND seq = $1`, seq)
	}
	undamage := func(seq int) {
		t.Helper()
		exec(t, name, `UPDATE messages SET message = substring(message from 1 for length(message) - 1) WHERE conversation = 'c' AND seq = $1`, seq)
	}
	damage(3)
	if _, err := open().Messages(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Messages with message 3 damaged: %v; want ErrDamaged", err)
	}
	reader := open()
	marked(t, reader, "c", mark, want[15:], "a fresh opening, message 3 damaged")

	undamage(3)
	damage(15) // the row before the mark's first message: read, checked
	if _, _, err := open().Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Marked with message 15, the one before the mark's first, damaged: %v; want ErrDamaged", err)
	}
	undamage(15)

	damage(17) // read already by reader: not read again
	if err := s.Append(ctx, "c", storetest.UserText("after")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "after")
	marked(t, reader, "c", mark, want[15:], "the reader after an append, message 17 damaged since it read it")
	undamage(17)
	msgs, err := reader.Messages(ctx, "c")
	if err != nil || !slices.Equal(storetest.Texts(msgs), want) {
		t.Fatalf("Messages of the reader that read from the mark: %q, %v; want every message, %q", storetest.Texts(msgs), err, want)
	}
	marked(t, reader, "c", mark, want[15:], "the reader after it read every message")
}

// A mark whose facts, place or checksum changed behind the store's back
// reads as damaged in a fresh opening; in one that read it before, so
// does a changed place or checksum (read again with every Marked), while
// its facts, not sent again under the same stamp, are the ones it read
// and checked, as a message already read is not read again. A mark past
// the conversation's end (as if rows were lost) reads as damaged too.
func TestADamagedMarkIsReportedAsDamaged(t *testing.T) {
	ctx := context.Background()
	open, name := opener(t, nil)
	s := open()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("m", 5)...); err != nil {
		t.Fatal(err)
	}
	reader := open()
	for _, damage := range []string{
		`UPDATE conversation_marks SET facts = 'other facts'`,
		`UPDATE conversation_marks SET "from" = 2`,
		`UPDATE conversation_marks SET crc = crc + 1`,
	} {
		if err := s.SetMark(ctx, "c", history.Mark{From: 3, Facts: []byte("facts")}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reader.Marked(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		exec(t, name, damage)
		if _, _, err := open().Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
			t.Errorf("a fresh opening, after %s: Marked: %v; want ErrDamaged", damage, err)
		}
		m, _, err := reader.Marked(ctx, "c")
		if strings.Contains(damage, "facts") {
			if err != nil || string(m.Facts) != "facts" {
				t.Errorf("an opening that read the mark, after %s: Marked = %q, %v; want the facts it read", damage, m.Facts, err)
			}
		} else if !errors.Is(err, history.ErrDamaged) {
			t.Errorf("an opening that read the mark, after %s: Marked: %v; want ErrDamaged", damage, err)
		}
	}
	if err := s.SetMark(ctx, "c", history.Mark{From: 5}); err != nil {
		t.Fatal(err)
	}
	exec(t, name, `UPDATE conversations SET messages = 4 WHERE id = 'c'; DELETE FROM messages WHERE conversation = 'c' AND seq = 5`)
	if _, _, err := open().Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Errorf("a mark past the end: %v; want ErrDamaged", err)
	}
}

// marked fails t unless st's Marked of id gives mark and the messages of
// texts want.
func marked(t *testing.T, st *postgres.Store, id string, mark history.Mark, want []string, when string) {
	t.Helper()
	m, msgs, err := st.Marked(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: Marked(%s): %v", when, id, err)
	}
	if m.From != mark.From || !bytes.Equal(m.Facts, mark.Facts) || !slices.Equal(storetest.Texts(msgs), want) {
		t.Fatalf("%s: Marked(%s) = from %d (%q), %q; want from %d (%q), %q", when, id, m.From, m.Facts, storetest.Texts(msgs), mark.From, mark.Facts, want)
	}
}

// readAll is st's Messages of id; it fails t on an error.
func readAll(t *testing.T, st history.Store, id string) []history.Message {
	t.Helper()
	msgs, err := st.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// Readers sharing one opening read marked and whole at once while another
// opening appends and moves the mark on: each Marked gives messages from
// its mark's place, numbered on without a gap, and each Messages every
// message so far; what one reader is given, another's read never writes
// into (run with -race).
func TestMarkedAndMessagesAtOnceInOneOpeningAgree(t *testing.T) {
	ctx := context.Background()
	open, _ := opener(t, nil)
	w, shared := open(), open()
	if err := w.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	text := func(i int) history.Message { return storetest.UserText(fmt.Sprint("m ", i)) }
	if err := w.Append(ctx, "c", text(0), text(1), text(2), text(3)); err != nil {
		t.Fatal(err)
	}
	check := func(from int, msgs []history.Message) error {
		for i, m := range msgs {
			if want := fmt.Sprint("m ", from+i); m.Text() != want {
				return fmt.Errorf("message %d of those from %d reads %q; want %q", i, from, m.Text(), want)
			}
		}
		return nil
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	for r := range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				var err error
				if r%2 == 0 {
					var m history.Mark
					var msgs []history.Message
					if m, msgs, err = shared.Marked(ctx, "c"); err == nil {
						err = check(m.From, msgs)
						_ = append(msgs, text(-1)) // the caller's: never the store's or another caller's
						_ = append(m.Facts, 'x')
					}
				} else {
					var msgs []history.Message
					if msgs, err = shared.Messages(ctx, "c"); err == nil {
						err = check(0, msgs)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	n := 4
	for step := range 40 {
		if err := w.Append(ctx, "c", text(n), text(n+1)); err != nil {
			t.Fatal(err)
		}
		n += 2
		if step%5 == 0 {
			if err := w.SetMark(ctx, "c", history.Mark{From: n - 1 - step%3, Facts: []byte(fmt.Sprint("before ", n))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A fork whose point was changed behind the store's back reads as damaged
// through Marked in a fresh opening, as through Messages (Get's check of
// the link's checksum).
func TestAForkWhosePointChangedIsDamagedToMarked(t *testing.T) {
	ctx := context.Background()
	open, name := opener(t, nil)
	s := open()
	if err := s.Create(ctx, history.Conversation{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "b", storetest.Numbered("m", 5)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "b", BaseAt: 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "f", history.Mark{From: 2}); err != nil {
		t.Fatal(err)
	}
	exec(t, name, `UPDATE conversations SET base_at = 3, messages = 3 WHERE id = 'f'`)
	if _, err := open().Messages(ctx, "f"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Messages of the fork whose point changed: %v; want ErrDamaged", err)
	}
	if _, _, err := open().Marked(ctx, "f"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Marked of the fork whose point changed: %v; want ErrDamaged", err)
	}
}

// A row added past a conversation's count behind the store's back reads
// as damaged through Marked, fresh and after a read, as through a fresh
// Messages (Get's count of the rows).
func TestARowPastTheCountIsDamagedToMarked(t *testing.T) {
	ctx := context.Background()
	open, name := opener(t, nil)
	s := open()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("m", 5)...); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMark(ctx, "c", history.Mark{From: 3}); err != nil {
		t.Fatal(err)
	}
	reader := open()
	if _, _, err := reader.Marked(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	raw := rawPostgres(t, name, "c")[4] // message 5's bytes, stored again as a sixth under its own checksum
	exec(t, name, `INSERT INTO messages (conversation, seq, message, crc) VALUES ('c', 6, $1, $2)`, raw, record.MessageChecksum("c", 6, raw))
	if _, err := open().Messages(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
		t.Fatalf("Messages with a row past the count: %v; want ErrDamaged", err)
	}
	for who, st := range map[string]*postgres.Store{"a fresh opening": open(), "an opening that read it": reader} {
		if _, _, err := st.Marked(ctx, "c"); !errors.Is(err, history.ErrDamaged) {
			t.Errorf("%s: Marked with a row past the count: %v; want ErrDamaged", who, err)
		}
	}
}
