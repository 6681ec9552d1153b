package sqlite

// This file tests that a read on a reader, whose snapshot precedes the
// writer's rewind, keeping what it read as the writer's Append keeps its
// messages, is never taken for the writer's own (Store.own).

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// gapCtx is the writer's context; the first time Append's kept closure
// (Store.Append.func1) looks a value up in it — history.WriterOf, as the
// Append keeps what it committed — it runs gap. No production hook is
// needed: WriterOf is a ctx.Value call the caller's context answers.
// (Before the fix WriterOf ran between keepAppended and ownAppend, which
// each took the store's lock.) ran says whether gap ran: a test checks it,
// so that a closure renamed does not make it pass without its gap.
type gapCtx struct {
	context.Context
	once sync.Once
	gap  func()
	ran  bool
}

func (c *gapCtx) Value(key any) any {
	pc := make([]uintptr, 20)
	n := runtime.Callers(2, pc)
	frames := runtime.CallersFrames(pc[:n])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "(*Store).Append.func1") {
			c.once.Do(func() { c.ran = true; c.gap() })
			break
		}
		if !more {
			break
		}
	}
	return c.Context.Value(key)
}

// A read on a reader (no claim) takes its snapshot: c of 10 messages
// (marked at 3, or not). Mid-read c's writer rewinds c to 5 (which drops
// a mark at 3), perhaps marks it again at 2, reads it, and appends 3. The
// other read's keep of its older snapshot — which drops Store.own — lands
// as the Append keeps what it committed (gapCtx). Before the fix,
// keepAppended and ownAppend each took s.mu, and a keep between them had
// its stale messages marked as the writer's own: the writer's next read
// took them without a query. Whatever the read, the writer's Messages and
// Marked are a fresh store's.
func TestAReadKeptAsTheWritersAppendIsKeptIsNotTheWritersOwn(t *testing.T) {
	for _, c := range []struct {
		name    string
		markAt  int  // c's mark before (0: none)
		marked  bool // the other read is a Marked (else a read whole)
		newMark bool // the writer marks c at 2 after its rewind
	}{
		{"a read whole", 0, false, false},
		{"a Marked of a conversation with no mark", 0, true, false},
		{"a Marked, the writer marking it again", 3, true, true},
		{"a Marked, the mark the rewind dropped not set again", 3, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, w := freshWriter(t, c.markAt)

			held, release := make(chan struct{}), make(chan struct{})
			hold := func() { close(held); <-release }
			t.Cleanup(func() { whileReading, afterMarkedRead = nil, nil })
			if c.marked {
				afterMarkedRead = func(string) { afterMarkedRead = nil; hold() }
			} else {
				whileReading = func(id, point string) {
					if id == "c" && point == "record" {
						whileReading = nil
						hold()
					}
				}
			}
			readDone := make(chan error, 1)
			go func() {
				var err error
				if c.marked {
					_, _, err = s.Marked(ctx, "c")
				} else {
					_, err = s.Messages(ctx, "c")
				}
				readDone <- err
			}()
			<-held // its snapshot: c of 10
			if _, err := s.Rewind(w, "c", 5); err != nil {
				t.Fatal(err)
			}
			if c.newMark {
				if err := s.SetMark(w, "c", history.Mark{From: 2, Facts: []byte("new")}); err != nil {
					t.Fatal(err)
				}
			}
			if c.markAt > 0 {
				if _, m, err := s.Marked(w, "c"); err != nil || len(m) != map[bool]int{false: 5, true: 3}[c.newMark] {
					t.Fatalf("c's Marked after the rewind: %d, %v", len(m), err)
				}
			} else if m, err := s.Messages(w, "c"); err != nil || len(m) != 5 {
				t.Fatalf("c after the rewind: %d, %v", len(m), err)
			}
			gw := &gapCtx{Context: w, gap: func() {
				close(release)
				if err := <-readDone; err != nil {
					t.Error(err)
				}
			}}
			if err := s.Append(gw, "c", userText("n5"), userText("n6"), userText("n7")); err != nil {
				t.Fatal(err)
			}
			if !gw.ran {
				t.Fatal("the Append never looked its writer up in its kept closure (Store.Append.func1): the test's gap did not run")
			}

			fresh := openStore(t, s.path)
			want := "m 0, m 1, m 2, m 3, m 4, n5, n6, n7"
			if got := texts(readAll(t, fresh, "c")); got != want {
				t.Fatalf("setup: c holds %s", got)
			}
			messages := func() {
				if m, err := s.Messages(w, "c"); err != nil || texts(m) != want {
					t.Fatalf("c's writer reads %s (%v); c holds %s", texts(m), err, want)
				}
			}
			marked := func() { markedAsAfresh(t, s, w, "c") }
			if c.markAt > 0 { // each read first where the stale state would show first
				marked()
				messages()
			} else {
				messages()
				marked()
			}
		})
	}
}

// The writer's round under its claim — Marked, Messages, Append, lazy
// SetMark, Append — takes nothing from a reader once its first read is
// kept: the readers are swapped for a closed pool, so that any read on
// one fails.
func TestTheWritersRoundTakesNothingFromAReader(t *testing.T) {
	s, w := freshWriter(t, 3)
	if _, _, err := s.Marked(w, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(w, "c", userText("first")); err != nil {
		t.Fatal(err)
	}
	rdb := s.rdb
	closed := openDB(sqliteURI(s.path, "mode=ro"), nil)
	closed.Close()
	s.rdb = closed
	defer func() { s.rdb = rdb }()
	for i := range 5 {
		if _, _, err := s.Marked(w, "c"); err != nil {
			t.Fatalf("round %d: Marked: %v", i, err)
		}
		if err := s.Append(w, "c", userText(fmt.Sprint("a", i))); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMark(history.Lazy(w), "c", history.Mark{From: 5 + i, Facts: []byte("f")}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Marked(w, "c"); err != nil {
			t.Fatalf("round %d: Marked after SetMark: %v", i, err)
		}
		if err := s.Append(history.Lazy(w), "c", userText(fmt.Sprint("b", i))); err != nil {
			t.Fatal(err)
		}
	}
}
