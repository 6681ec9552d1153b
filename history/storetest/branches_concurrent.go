package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// This file holds forks made while the conversation forked is written to
// the suite: its owner appends and rewinds under its claim while others,
// through two openings, fork it at any point and read the forks. A fork
// reads exactly the first messages its base held when it was made, then
// and ever after (docs/branches.md).

// Texts is each message's text (history.Message.Text), in order: how the
// tests of runs of forks and appends, whose messages each have a text of
// their own, say what a conversation holds.
func Texts(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// forkMade is one fork made while the owner wrote: at what point, what it
// read at once, and the owner's states it may have been made in (those
// recorded from lo on, up to one past hi: the owner's next write may have
// been committed, not yet recorded).
type forkMade struct {
	id     string
	at     int
	lo, hi int
	read   []string
}

// forksWhileOwnerWrites: conversation x's owner appends (and, with
// rewinds, takes x back to an earlier point) under its claim, one write
// after another, recording what x holds after each; meanwhile four
// forkers, through two openings, fork x at random points up to its count
// and read each fork at once. Every fork reads exactly x's first N
// messages in one of the states x was in while it was made — never a
// mixture, never messages x did not hold together — and reads the same at
// the end, after the rewinds that followed; a fork refused is one whose
// point x was rewound below meanwhile, and says so.
func forksWhileOwnerWrites(t *testing.T, s Subject, rewinds bool) {
	e := s.env(t)
	b := brancher(t, e.s)
	e.conversation("x")
	owner, err := e.s.Claim(e.ctx, "x", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(e.ctx, owner)
	const writes, forkers, forksEach = 40, 4, 6
	var mu sync.Mutex
	states := [][]string{nil} // what x holds after each of the owner's writes
	last := func() int { mu.Lock(); defer mu.Unlock(); return len(states) - 1 }
	stores := []history.Store{e.s, e.open()}
	var wg sync.WaitGroup
	errs := make(chan error, 1+forkers*forksEach)
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		cur, n := []string(nil), 0
		for i := range writes {
			if rewinds && len(cur) > 0 && r.IntN(4) == 0 {
				at := r.IntN(len(cur))
				if _, err := b.Rewind(w, "x", at); err != nil {
					errs <- fmt.Errorf("write %d: the owner's rewind of x to %d: %w", i, at, err)
					return
				}
				cur = slices.Clip(cur[:at])
			} else {
				var msgs []history.Message
				for range 1 + r.IntN(2) {
					n++
					msgs = append(msgs, UserText(fmt.Sprintf("m%d", n)))
				}
				if err := e.s.Append(w, "x", msgs...); err != nil {
					errs <- fmt.Errorf("write %d: the owner's append to x: %w", i, err)
					return
				}
				cur = append(slices.Clip(cur), Texts(msgs)...)
			}
			mu.Lock()
			states = append(states, cur)
			mu.Unlock()
		}
	})
	made := make([][]forkMade, forkers)
	for f := range forkers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(3, uint64(f)))
			st := stores[f%2]
			for i := range forksEach {
				lo := last()
				c, err := st.Get(e.ctx, "x")
				if err != nil {
					errs <- err
					return
				}
				at := r.IntN(c.Messages + 1)
				id := fmt.Sprintf("f%d-%d", f, i)
				if _, err := st.(history.Brancher).Fork(e.ctx, history.Conversation{ID: id, Base: "x", BaseAt: at}); err != nil {
					if rewinds && strings.Contains(err.Error(), fmt.Sprintf("at message %d: it holds", at)) {
						continue // x was rewound below the point meanwhile
					}
					errs <- fmt.Errorf("fork %s of x at %d: %w", id, at, err)
					return
				}
				msgs, err := st.Messages(e.ctx, id)
				if err != nil {
					errs <- fmt.Errorf("reading fork %s: %w", id, err)
					return
				}
				made[f] = append(made[f], forkMade{id: id, at: at, lo: lo, hi: last(), read: Texts(msgs)})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if got := Texts(e.read(e.open(), "x")); !slices.Equal(got, states[len(states)-1]) {
		t.Fatalf("x reads %v after its owner's writes; want %v", got, states[len(states)-1])
	}
	other, forks := e.open(), 0
	for _, fs := range made {
		for _, f := range fs {
			forks++
			if !madeIn(f, states) {
				t.Errorf("fork %s of x at %d read %v at once; want x's first %d messages as x held them while it was made (states %d to %d: %v)", f.id, f.at, f.read, f.at, f.lo, min(f.hi+1, len(states)-1), states[f.lo:min(f.hi+2, len(states))])
				continue
			}
			if got := Texts(e.read(other, f.id)); !slices.Equal(got, f.read) {
				t.Errorf("fork %s of x at %d reads %v at the end; want %v, what it read when made", f.id, f.at, got, f.read)
			}
			e.sharesTruly(f.id)
		}
	}
	if forks < forkers*forksEach/2 {
		t.Fatalf("only %d of %d forks were made; want most (a refusal is for a point x was rewound below)", forks, forkers*forksEach)
	}
}

// madeIn reports whether fork f read the first f.at messages of one of
// the states x was in while f was made.
func madeIn(f forkMade, states [][]string) bool {
	for k := f.lo; k <= f.hi+1 && k < len(states); k++ {
		if len(states[k]) >= f.at && slices.Equal(states[k][:f.at], f.read) {
			return true
		}
	}
	return false
}
