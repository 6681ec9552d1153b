package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// Random forks, rewinds, switches and appends, on conversations that are
// forks of branches of forks, read after each step against a model (each
// conversation's messages as a list of texts): every conversation reads
// what the model says, in the two openings that make the changes by turns
// (whose memories of what they read must follow the moves, their own and
// the other's) and in a fresh one, and every
// record's count and base are true. The switches among them reach the
// chains a plain undo and redo never make (a branch based on another
// branch of the same conversation, a fork of a branch of a fork).
func TestRandomForksRewindsAndSwitchesReadAsTheModelSays(t *testing.T) {
	for seed := range 12 {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(seed)))
			path := filepath.Join(t.TempDir(), "h.db")
			first, second := openStore(t, path), openStore(t, path)
			ctx := context.Background()
			model := map[string][]string{}
			branchOf := map[string]string{}
			ids := func() []string {
				out := make([]string, 0, len(model))
				for id := range model {
					out = append(out, id)
				}
				slices.Sort(out)
				return out
			}
			pick := func() string { all := ids(); return all[r.Intn(len(all))] }
			n := 0
			text := func() string { n++; return fmt.Sprint("m", n) }
			if err := first.Create(ctx, history.Conversation{ID: "root"}); err != nil {
				t.Fatal(err)
			}
			model["root"] = nil
			for step := range 40 {
				// each step by one of two openings (two processes), each
				// of which keeps what it read
				s := first
				if r.Intn(2) == 1 {
					s = second
				}
				var did string
				switch op := r.Intn(10); {
				case op < 4: // append one to three
					id := pick()
					var msgs []history.Message
					for range 1 + r.Intn(3) {
						m := text()
						msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: m}}})
						model[id] = append(slices.Clip(model[id]), m)
					}
					if err := s.Append(ctx, id, msgs...); err != nil {
						t.Fatalf("step %d: append to %s: %v", step, id, err)
					}
					did = fmt.Sprintf("append %d to %s", len(msgs), id)
				case op < 6: // fork
					base := pick()
					at := r.Intn(len(model[base]) + 1)
					id := fmt.Sprint("f", step)
					if _, err := s.Fork(ctx, history.Conversation{ID: id, Base: base, BaseAt: at}); err != nil {
						t.Fatalf("step %d: fork %s at %d: %v", step, base, at, err)
					}
					model[id] = slices.Clip(model[base][:at])
					did = fmt.Sprintf("fork %s at %d into %s", base, at, id)
				case op < 8: // rewind
					id := pick()
					if len(model[id]) == 0 {
						continue
					}
					at := r.Intn(len(model[id]))
					b, err := s.Rewind(ctx, id, at)
					if err != nil {
						t.Fatalf("step %d: rewind %s to %d: %v", step, id, at, err)
					}
					model[b.ID] = model[id]
					model[id] = slices.Clip(model[id][:at])
					branchOf[b.ID] = id
					did = fmt.Sprintf("rewind %s to %d into %s", id, at, b.ID)
				case op == 8 && r.Intn(3) == 0: // delete, with its branches, unless others share them
					id := pick()
					if id == "root" || branchOf[id] != "" {
						continue
					}
					err := s.Delete(ctx, id)
					if errors.Is(err, history.ErrHasForks) {
						did = "a delete of " + id + " refused: " + err.Error()
						break
					}
					if err != nil {
						t.Fatalf("step %d: delete %s: %v", step, id, err)
					}
					gone := map[string]bool{id: true}
					for grew := true; grew; {
						grew = false
						for b, of := range branchOf {
							if gone[of] && !gone[b] {
								gone[b], grew = true, true
							}
						}
					}
					for g := range gone {
						delete(model, g)
						delete(branchOf, g)
						if _, err := s.Get(ctx, g); !errors.Is(err, history.ErrNotFound) {
							t.Fatalf("step %d: after deleting %s, Get(%s) = %v; want it gone with it", step, id, g, err)
						}
					}
					did = fmt.Sprintf("delete %s (and %d branches)", id, len(gone)-1)
				default: // switch to one of its branches
					var pairs [][2]string
					for b, of := range branchOf {
						pairs = append(pairs, [2]string{of, b})
					}
					if len(pairs) == 0 {
						continue
					}
					slices.SortFunc(pairs, func(a, b [2]string) int { return cmpPair(a, b) })
					p := pairs[r.Intn(len(pairs))]
					if err := s.Switch(ctx, p[0], p[1]); err != nil {
						t.Fatalf("step %d: switch %s to %s: %v", step, p[0], p[1], err)
					}
					model[p[0]], model[p[1]] = model[p[1]], model[p[0]]
					did = fmt.Sprintf("switch %s to %s", p[0], p[1])
				}
				fresh := openStore(t, path)
				for _, st := range []*Store{first, second, fresh} {
					for _, id := range ids() {
						msgs, err := st.Messages(ctx, id)
						if err != nil {
							t.Fatalf("step %d (%s): Messages(%s): %v", step, did, id, err)
						}
						got := make([]string, len(msgs))
						for i, m := range msgs {
							got[i] = m.Text()
						}
						if !slices.Equal(got, model[id]) && len(got)+len(model[id]) > 0 {
							t.Fatalf("step %d (%s): %s reads %v; want %v", step, did, id, got, model[id])
						}
						c, err := st.Get(ctx, id)
						if err != nil || c.Messages != len(got) || c.BranchOf != branchOf[id] {
							t.Fatalf("step %d (%s): Get(%s) = %+v, %v; want %d messages, branch of %q", step, did, id, c, err, len(got), branchOf[id])
						}
						if c.Base != "" && len(model[c.Base]) < c.BaseAt {
							t.Fatalf("step %d (%s): %s shares %d messages of %s, which holds %d", step, did, id, c.BaseAt, c.Base, len(model[c.Base]))
						}
						if c.Base != "" && !slices.Equal(model[c.Base][:c.BaseAt], model[id][:c.BaseAt]) {
							t.Fatalf("step %d (%s): %s shares the first %d messages of %s, which are not its own", step, did, id, c.BaseAt, c.Base)
						}
					}
				}
				fresh.Close()
			}
		})
	}
}

func cmpPair(a, b [2]string) int {
	if a[0] != b[0] {
		if a[0] < b[0] {
			return -1
		}
		return 1
	}
	switch {
	case a[1] < b[1]:
		return -1
	case a[1] > b[1]:
		return 1
	}
	return 0
}

// longConversation makes conversation id of n short messages in s,
// appended a thousand at a time.
func longConversation(t testing.TB, s *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: id, System: "be brief"}); err != nil {
		t.Fatal(err)
	}
	for done := 0; done < n; {
		batch := make([]history.Message, 0, min(1000, n-done))
		for range cap(batch) {
			batch = append(batch, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d: a line of a long conversation", done)}}})
			done++
		}
		if err := s.Append(ctx, id, batch...); err != nil {
			t.Fatal(err)
		}
	}
}

// pages is the store's size in pages (its file and its log's frames).
func pages(t testing.TB, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A fork of a 10,000-message conversation grows the store by its record
// only: a page or two (the record, its index entry), where a copy of the
// messages would take hundreds; and so do forks of the fork.
func TestAForkGrowsTheStoreByItsRecordOnly(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	before := pages(t, s)
	longConversation(t, s, "long", 10_000)
	base := pages(t, s) - before
	for i, at := range []int{10_000, 5_000, 9_999} {
		was := pages(t, s)
		f, err := s.Fork(ctx, history.Conversation{ID: fmt.Sprint("fork", i), Base: "long", BaseAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if grew := pages(t, s) - was; grew > 3 {
			t.Fatalf("a fork at %d of a conversation of 10,000 messages (%d pages) grew the store by %d pages; want its record only (3 at most)", at, base, grew)
		}
		msgs, err := s.Messages(ctx, f.ID)
		if err != nil || len(msgs) != at || msgs[at-1].Text() != fmt.Sprintf("message %d: a line of a long conversation", at-1) {
			t.Fatalf("fork %s reads %d messages, %v; want the base's first %d", f.ID, len(msgs), err, at)
		}
	}
	if base < 100 {
		t.Fatalf("the base took %d pages: too few for the comparison to say anything", base)
	}
}

// BenchmarkFork measures a fork of a long conversation, at its end, side by
// side in one run with the floors of a synced write: a Create (a record
// alone) and an Append of one message; and at three lengths, 1,000, 10,000
// and 100,000 messages, to show that it costs the same whatever the
// length (one record, its base's count read from its record, never
// counted).
//
// Run:
//
//	go test ./history/sqlite -run '^$' -bench Fork -count 6
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, filepath.Join(b.TempDir(), "h.db"))
	lengths := []int{1_000, 10_000, 100_000}
	for _, n := range lengths {
		longConversation(b, s, fmt.Sprint("long", n), n)
	}
	i := 0 // the ids made: every run of a sub-benchmark (-count) makes new ones
	b.Run("floor-create", func(b *testing.B) {
		for b.Loop() {
			i++
			if err := s.Create(ctx, history.Conversation{ID: fmt.Sprint("new", i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor-append-one", func(b *testing.B) {
		one := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "one more"}}}
		for b.Loop() {
			if err := s.Append(ctx, "long1000", one); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range lengths {
		b.Run(fmt.Sprint("fork-of-", n), func(b *testing.B) {
			base := fmt.Sprint("long", n)
			for b.Loop() {
				i++
				if _, err := s.Fork(ctx, history.Conversation{ID: fmt.Sprint(base, "-fork", i), Base: base, BaseAt: n}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A conversation one opening has read, rewound or switched by another
// opening (another process), reads as it is now in the first: what that
// one kept of it in memory is of messages since moved, and is read again,
// not taken for the start of what the other appended after the rewind.
func TestAConversationRewoundElsewhereIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	reader, writer := openStore(t, path), openStore(t, path)
	say := func(texts ...string) []history.Message {
		var out []history.Message
		for _, x := range texts {
			out = append(out, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: x}}})
		}
		return out
	}
	texts := func(msgs []history.Message) []string {
		out := make([]string, len(msgs))
		for i, m := range msgs {
			out[i] = m.Text()
		}
		return out
	}
	reads := func(when string, id string, want ...string) {
		t.Helper()
		msgs, err := reader.Messages(ctx, id)
		if err != nil || !slices.Equal(texts(msgs), want) {
			t.Fatalf("%s: the reader reads %s as %v, %v; want %v", when, id, texts(msgs), err, want)
		}
	}
	if err := writer.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Append(ctx, "c", say("1", "2", "3", "4", "5", "6")...); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 5}); err != nil {
		t.Fatal(err)
	}
	reads("at first", "c", "1", "2", "3", "4", "5", "6")
	reads("at first", "f", "1", "2", "3", "4", "5")
	b, err := writer.Rewind(ctx, "c", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Append(ctx, "c", say("a", "b", "c", "d")...); err != nil {
		t.Fatal(err)
	}
	reads("after a rewind elsewhere and four more", "c", "1", "2", "3", "a", "b", "c", "d")
	reads("after a rewind elsewhere", b.ID, "1", "2", "3", "4", "5", "6")
	reads("after a rewind elsewhere", "f", "1", "2", "3", "4", "5")
	if err := writer.Switch(ctx, "c", b.ID); err != nil {
		t.Fatal(err)
	}
	if err := writer.Append(ctx, "c", say("7")...); err != nil {
		t.Fatal(err)
	}
	reads("after a switch elsewhere", "c", "1", "2", "3", "4", "5", "6", "7")
	reads("after a switch elsewhere", b.ID, "1", "2", "3", "a", "b", "c", "d")
}

// An opening that read a conversation another opening rewound, and then
// appends to it itself, keeps what it appends on top of the messages as
// they are now, not of those it read before the rewind.
func TestAnAppendAfterARewindElsewhereKeepsNoStaleMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	mine, other := openStore(t, path), openStore(t, path)
	say := func(x string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: x}}}
	}
	if err := other.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Append(ctx, "c", say("1"), say("2"), say("3")); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Rewind(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	if err := other.Append(ctx, "c", say("a"), say("b")); err != nil {
		t.Fatal(err)
	}
	if err := mine.Append(ctx, "c", say("4")); err != nil {
		t.Fatal(err)
	}
	msgs, err := mine.Messages(ctx, "c")
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text())
	}
	if err != nil || !slices.Equal(got, []string{"1", "a", "b", "4"}) {
		t.Fatalf("after a rewind elsewhere and an append here, c reads %v, %v; want [1 a b 4]", got, err)
	}
}

// A rewind or switch that would move a damaged message reports it and
// moves nothing: a message is checked before it is given a checksum in
// another conversation, which would hide the damage for good.
func TestARewindOrSwitchOverADamagedMessageMovesNothing(t *testing.T) {
	ctx := context.Background()
	say := func(x string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: x}}}
	}
	for _, op := range []string{"rewind", "switch"} {
		t.Run(op, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			s := openStore(t, path)
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "c", say("1"), say("2"), say("3")); err != nil {
				t.Fatal(err)
			}
			var err error
			if op == "rewind" {
				damage(t, path, `UPDATE messages SET message = replace(message, '"3"', '"X"') WHERE conversation = 'c' AND seq = 3`)
				_, err = s.Rewind(ctx, "c", 1)
			} else {
				b, rerr := s.Rewind(ctx, "c", 1)
				if rerr != nil {
					t.Fatal(rerr)
				}
				damage(t, path, `UPDATE messages SET message = replace(message, '"3"', '"X"') WHERE conversation = '`+b.ID+`' AND seq = 3`)
				err = s.Switch(ctx, "c", b.ID)
			}
			if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), "message 3") {
				t.Fatalf("%s over a damaged message: %v; want ErrDamaged naming message 3", op, err)
			}
			var rows int
			if err := s.db.QueryRow(`SELECT COUNT(*) FROM messages WHERE conversation = 'c'`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"rewind": 3, "switch": 1}[op]
			if rows != want {
				t.Fatalf("after the refused %s, c has %d rows of its own; want %d, as before it", op, rows, want)
			}
			if c, err := openStore(t, path).Get(ctx, "c"); err != nil || c.Messages != want {
				t.Fatalf("after the refused %s, c is %+v, %v; want %d messages", op, c, err, want)
			}
		})
	}
}

// A fork whose base was deleted behind the store's back (by hand, or by a
// myelin of layout 5, which deletes without asking) reads as damaged,
// naming the base, not as a conversation that is not there.
func TestAForkWhoseBaseIsGoneIsDamagedNotMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	ctx := context.Background()
	s := openStore(t, path)
	longConversation(t, s, "b", 3)
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "b", BaseAt: 2}); err != nil {
		t.Fatal(err)
	}
	damage(t, path, `DELETE FROM messages WHERE conversation = 'b'; DELETE FROM conversations WHERE id = 'b'`)
	_, err := openStore(t, path).Messages(ctx, "f")
	if !errors.Is(err, history.ErrDamaged) || errors.Is(err, history.ErrNotFound) || !strings.Contains(err.Error(), "b, which is not in the store") {
		t.Fatalf("Messages of a fork whose base is gone: %v; want ErrDamaged (not ErrNotFound) naming the base", err)
	}
}
