package sqlite

// This file tests what a read on a reader connection (readers.go) keeps
// when its snapshot precedes this store's own writes, and the readers'
// files: opened at open, counted at close.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// A read whole of fork f (base c at 8) takes its snapshot; mid-read this
// same store rewinds c to 5 and reads c (kept: 5), then (under c's
// claim) an Append of nothing marks what is kept as the writer's own.
// The fork's read, still in its old snapshot, reads c's base messages
// from memory (known: 5) and finds the tag at 5 unchanged (row 5 did not
// move), so it extends the kept c in place with rows 6..8 of its old
// snapshot — rows c no longer holds.
func TestAForksReadDoesNotHandItsBasesWriterRowsOfAnOlderSnapshot(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "own"}[own], func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
			makeConv(t, s, "c", "", 0, "m", 10)
			makeConv(t, s, "f", "c", 8, "", 8)
			w := writing(t, s, "c")
			s.dropRead("c")
			s.dropRead("f")
			t.Cleanup(func() { whileReading = nil })
			whileReading = func(id, point string) {
				if id == "f" && point == "record" {
					whileReading = nil
					if _, err := s.Rewind(w, "c", 5); err != nil {
						t.Error(err)
					}
					if m, err := s.Messages(w, "c"); err != nil || len(m) != 5 {
						t.Errorf("c after rewind: %d, %v", len(m), err)
					}
					if own {
						if err := s.Append(w, "c"); err != nil {
							t.Error(err)
						}
					}
				}
			}
			if _, err := s.Messages(ctx, "f"); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			keptN, ownTok := len(s.read["c"]), s.own["c"]
			s.mu.Unlock()
			t.Logf("kept of c after the fork's read: %d messages, own %q", keptN, ownTok)
			m, err := s.Messages(w, "c")
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != 5 {
				t.Fatalf("c's writer reads %d messages (%s); c holds 5", len(m), texts(m))
			}
			if _, mm, err := s.Marked(w, "c"); err != nil || len(mm) != 5 {
				t.Fatalf("Marked: %d, %v", len(mm), err)
			}
		})
	}
}

// A read whole of c (by anyone: no claim) takes its snapshot (10
// messages); mid-read c's writer, through the same store, rewinds c to
// 5, reads it (kept: 5) and appends 3 (kept: 8, its own). The read whole
// ends and keeps its 10 old messages — further than 8 — replacing what
// the writer's append kept, but the writer's own mark stays: the writer's
// next Messages takes the stale 10 without a query.
func TestAReadWholeOfAnOlderSnapshotIsNotTheWritersOwn(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 10)
	w := writing(t, s, "c")
	s.dropRead("c")
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		if id == "c" && point == "record" {
			whileReading = nil
			if _, err := s.Rewind(w, "c", 5); err != nil {
				t.Error(err)
			}
			if m, err := s.Messages(w, "c"); err != nil || len(m) != 5 {
				t.Errorf("c after rewind: %d, %v", len(m), err)
			}
			if err := s.Append(w, "c", userText("n5"), userText("n6"), userText("n7")); err != nil {
				t.Error(err)
			}
		}
	}
	if m, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("the held read gave %s", texts(m))
	}
	want := "m 0, m 1, m 2, m 3, m 4, n5, n6, n7"
	if got := texts(readAll(t, openStore(t, s.path), "c")); got != want {
		t.Fatalf("setup: c holds %s", got)
	}
	m, err := s.Messages(w, "c")
	if err != nil {
		t.Fatal(err)
	}
	if texts(m) != want {
		t.Fatalf("c's writer reads %s; c holds %s", texts(m), want)
	}
	if err := s.Append(w, "c", userText("n8")); err != nil {
		t.Fatal(err)
	}
	if got := texts(readAll(t, s, "c")); got != want+", n8" {
		t.Fatalf("after the next append c reads %s", got)
	}
}

// As above, the conversation deleted and made again mid-read: the
// deleted conversation's messages are handed to the new one's writer.
func TestAReadOfADeletedConversationIsNotHandedToTheNewOnesWriter(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 10)
	s.dropRead("c")
	h := history.NewHolder()
	w := history.Writing(ctx, h)
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		if id == "c" && point == "record" {
			whileReading = nil
			if err := s.Delete(ctx, "c"); err != nil {
				t.Error(err)
			}
			makeConv(t, s, "c", "", 0, "", 0)
			if _, err := s.Claim(ctx, "c", h, time.Minute); err != nil {
				t.Error(err)
			}
			if m, err := s.Messages(w, "c"); err != nil || len(m) != 0 {
				t.Errorf("new c: %d, %v", len(m), err)
			}
			if err := s.Append(w, "c", userText("new0"), userText("new1")); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := s.Messages(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	want := "new0, new1"
	if got := texts(readAll(t, openStore(t, s.path), "c")); got != want {
		t.Fatalf("setup: c holds %s", got)
	}
	if m, err := s.Messages(w, "c"); err != nil || texts(m) != want {
		t.Fatalf("the new c's writer reads %s (%v); c holds %s", texts(m), err, want)
	}
}

// NoFollow: the store opened with it; while one read holds the first
// reader, the store's file is moved aside and a link to another store
// put in its place. The next read opens the second reader by the path,
// following the link: it reads (and keeps) the other store's messages.
func TestEveryReaderIsOpenedWhileTheFilesAreTheOnesChecked(t *testing.T) {
	ctx := context.Background()
	dir, odir := t.TempDir(), t.TempDir()
	other := filepath.Join(odir, "o.db")
	o, err := Open(other)
	if err != nil {
		t.Fatal(err)
	}
	makeConv(t, o, "c", "", 0, "evil", 2)
	o.Close()
	path := filepath.Join(dir, "h.db")
	s, err := OpenWith(path, Options{NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	makeConv(t, s, "x", "", 0, "x", 3)
	makeConv(t, s, "c", "", 0, "good", 2)
	s.dropRead("x")
	s.dropRead("c")
	var got string
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		if id == "x" && point == "record" {
			whileReading = nil
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(other, path); err != nil {
				t.Error(err)
			}
			m, err := s.Messages(ctx, "c")
			got = fmt.Sprint(texts(m), " ", err)
		}
	}
	if _, err := s.Messages(ctx, "x"); err != nil {
		t.Log(err)
	}
	t.Logf("c read while the link was there: %s", got)
	if strings.Contains(got, "evil") {
		t.Fatalf("a store opened with NoFollow read another store's conversation through a link planted after open: %s", got)
	}
}

// Close while a read whole holds a reader: the reader closes last.
func TestCloseDuringAReadLeavesNoLogOnceTheReadEnds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	before := openFiles(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	makeConv(t, s, "c", "", 0, "m", 20)
	s.dropRead("c")
	held, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { whileReading = nil })
	whileReading = func(id, point string) {
		whileReading = nil
		close(held)
		<-release
	}
	done := make(chan error, 1)
	go func() { _, err := s.Messages(ctx, "c"); done <- err }()
	<-held
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	returned := false
	select {
	case err := <-closed:
		returned = true
		t.Logf("Close returned during the read: %v", err)
	case <-time.After(500 * time.Millisecond):
		t.Log("Close waits for the read")
	}
	close(release)
	t.Logf("the read: %v", <-done)
	if !returned {
		select {
		case err := <-closed:
			t.Logf("Close: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not return")
		}
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Errorf("after Close (during a read) the log is still there")
	}
	if after := openFiles(t); after > before {
		t.Errorf("%d files open before, %d after Close", before, after)
	}
}

// freshWriter is a new store holding conversation "c" of 10 messages,
// marked from markAt (0: no mark), with nothing of it read and kept, and
// the context of c's writer (writing).
func freshWriter(t *testing.T, markAt int) (*Store, context.Context) {
	t.Helper()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	makeConv(t, s, "c", "", 0, "m", 10)
	if markAt > 0 {
		if err := s.SetMark(context.Background(), "c", history.Mark{From: markAt, Facts: []byte("facts")}); err != nil {
			t.Fatal(err)
		}
	}
	w := writing(t, s, "c")
	s.dropRead("c")
	return s, w
}

// writing claims conversation id in s for a minute and returns the
// writer's context (history.Writing) under that claim.
func writing(t *testing.T, s *Store, id string) context.Context {
	t.Helper()
	ctx := context.Background()
	h := history.NewHolder()
	if _, err := s.Claim(ctx, id, h, time.Minute); err != nil {
		t.Fatal(err)
	}
	return history.Writing(ctx, h)
}
