package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// Random histories of another opening's writes (create, append, fork,
// rewind, switch, delete and remake under the same ids, marks) with r
// reading (Messages, Marked) and appending/marking between them; every
// read of r is compared with a store opened afresh (from the review of
// the remake fix: before it, 3–5 seeds in 20–40 failed). Eight seeds by
// default, MYELIN_REMAKE_SEEDS=N for more.
func TestAnotherOpeningsRandomWritesAreReadAsAFreshStoreReadsThem(t *testing.T) {
	seeds := 8
	if s := os.Getenv("MYELIN_REMAKE_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomRemakes(t, uint64(seed)) })
	}
}

func randomRemakes(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	path := markedStore(t, 6, 0)
	w, r := openStore(t, path), openStore(t, path)
	names := []string{"c", "d", "f", "g"}
	msgn := 0
	msg := func() history.Message { msgn++; return userText(fmt.Sprint("x", msgn)) }
	all := func() []history.Conversation {
		cs, err := w.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	pick := func() (history.Conversation, bool) {
		cs := all()
		if len(cs) == 0 {
			return history.Conversation{}, false
		}
		return cs[rng.IntN(len(cs))], true
	}
	var log []string
	note := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	fail := func(f string, a ...any) {
		t.Helper()
		for _, l := range log {
			t.Log(l)
		}
		t.Fatalf(f, a...)
	}
	for step := 0; step < 150; step++ {
		switch op := rng.IntN(14); op {
		case 9: // wipe everything, forks first, then remake c
			for range 20 {
				cs := all()
				if len(cs) == 0 {
					break
				}
				for _, c := range cs {
					_ = w.Delete(ctx, c.ID)
				}
			}
			note("wipe")
			if w.Create(ctx, history.Conversation{ID: "c"}) == nil {
				_ = w.Append(ctx, "c", msg(), msg(), msg(), msg())
				note("create c +4")
			}
		case 0: // create
			id := names[rng.IntN(len(names))]
			if w.Create(ctx, history.Conversation{ID: id}) == nil {
				note("create %s", id)
			}
		case 1, 2, 12: // append
			if c, ok := pick(); ok {
				k := 1 + rng.IntN(3)
				var ms []history.Message
				for range k {
					ms = append(ms, msg())
				}
				if err := w.Append(ctx, c.ID, ms...); err == nil {
					note("append %s +%d", c.ID, k)
				}
			}
		case 3, 10, 11, 13: // fork
			if c, ok := pick(); ok {
				id := names[rng.IntN(len(names))]
				at := rng.IntN(c.Messages + 1)
				if rng.IntN(2) == 0 {
					at = c.Messages
				}
				if _, err := w.Fork(ctx, history.Conversation{ID: id, Base: c.ID, BaseAt: at}); err == nil {
					note("fork %s from %s at %d", id, c.ID, at)
				}
			}
		case 4: // rewind
			if c, ok := pick(); ok && c.Messages > 0 {
				at := rng.IntN(c.Messages)
				if b, err := w.Rewind(ctx, c.ID, at); err == nil {
					note("rewind %s to %d (branch %s)", c.ID, at, b.ID)
				}
			}
		case 5: // switch
			if c, ok := pick(); ok {
				bs, _ := w.Branches(ctx, c.ID)
				if len(bs) > 0 {
					b := bs[rng.IntN(len(bs))]
					if err := w.Switch(ctx, c.ID, b.ID); err == nil {
						note("switch %s to %s", c.ID, b.ID)
					} else if !errors.Is(err, history.ErrNotBranch) {
						note("switch %s to %s: %v", c.ID, b.ID, err)
					}
				}
			}
		case 6: // delete
			if c, ok := pick(); ok {
				if w.Delete(ctx, c.ID) == nil {
					note("delete %s", c.ID)
				}
			}
		case 7: // mark
			if c, ok := pick(); ok && c.Messages > 0 {
				from := 1 + rng.IntN(c.Messages)
				if w.SetMark(ctx, c.ID, history.Mark{From: from, Facts: []byte(fmt.Sprint("w", step))}) == nil {
					note("mark %s at %d", c.ID, from)
				}
			}
		case 8: // r appends or marks
			if c, ok := pick(); ok {
				if rng.IntN(2) == 0 {
					if r.Append(ctx, c.ID, msg()) == nil {
						note("r append %s", c.ID)
					}
				} else if c.Messages > 0 {
					from := 1 + rng.IntN(c.Messages)
					if r.SetMark(ctx, c.ID, history.Mark{From: from, Facts: []byte(fmt.Sprint("r", step))}) == nil {
						note("r mark %s at %d", c.ID, from)
					}
				}
			}
		}
		// r reads every conversation, Messages or Marked, and compares
		fresh := openStore(t, path)
		for _, c := range all() {
			if rng.IntN(2) == 0 {
				got, err := r.Messages(ctx, c.ID)
				want, werr := fresh.Messages(ctx, c.ID)
				if (err == nil) != (werr == nil) || texts(got) != texts(want) {
					fail("step %d: r.Messages(%s) = %s (%v); fresh %s (%v)", step, c.ID, texts(got), err, texts(want), werr)
				}
			} else {
				m, got, err := r.Marked(ctx, c.ID)
				wm, want, werr := fresh.Marked(ctx, c.ID)
				if (err == nil) != (werr == nil) || texts(got) != texts(want) || m.From != wm.From || !bytes.Equal(m.Facts, wm.Facts) {
					fail("step %d: r.Marked(%s) = %d %q %s (%v); fresh %d %q %s (%v)", step, c.ID, m.From, m.Facts, texts(got), err, wm.From, wm.Facts, texts(want), werr)
				}
			}
		}
		fresh.Close()
		_ = time.Now
	}
	if os.Getenv("MYELIN_REMAKE_STATS") != "" {
		counts := map[string]int{}
		for _, l := range log {
			counts[strings.Fields(l)[0]+" "+strings.Fields(l + " x")[1]]++
		}
		t.Logf("%v", counts)
	}
}
