package history

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newConversation opens a store with conversation "c" in it.
func newConversation(t *testing.T) *SQLite {
	t.Helper()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	if err := s.Create(context.Background(), Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func userText(text string) Message {
	return Message{Role: User, Parts: []Part{{Type: TextPart, Text: text}}}
}

// elsewhere is a holder on another host: alive until its lease runs out.
func elsewhere() Holder {
	h := NewHolder()
	h.Host, h.Node, h.PID = "other-host", "other-node", 4242
	return h
}

func TestASecondHolderIsRefusedWithTheHolderNamed(t *testing.T) {
	s := newConversation(t)
	ctx := context.Background()
	first, err := s.Claim(ctx, "c", NewHolder(), DefaultLease)
	if err != nil || first.Since.IsZero() {
		t.Fatalf("claim %+v, %v", first, err)
	}
	_, err = s.Claim(ctx, "c", NewHolder(), DefaultLease)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Token != first.Token {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"conversation c is being advanced by another writer", "pid " + strconv.Itoa(os.Getpid()), "on " + first.Host, "since " + first.Since.Format("2006-01-02 15:04:05 UTC")} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q lacks %q", err, want)
		}
	}
	// claiming again what one holds renews it, keeping its start
	again, err := s.Claim(ctx, "c", first, DefaultLease)
	if err != nil || !again.Since.Equal(first.Since) {
		t.Fatalf("renewing by Claim: %+v, %v", again, err)
	}
}

// A holder whose process is gone on this host (kill -9) loses its claim at
// once: the next writer does not wait out the lease.
func TestAClaimOfADeadProcessOnThisHostIsTakenOverAtOnce(t *testing.T) {
	s := newConversation(t)
	ctx := context.Background()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := NewHolder()
	dead.PID = cmd.Process.Pid // exited and reaped
	if _, err := s.Claim(ctx, "c", dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	next, err := s.Claim(ctx, "c", NewHolder(), DefaultLease)
	if err != nil {
		t.Fatalf("the dead holder's claim was not taken over: %v", err)
	}
	if err := s.Append(Writing(ctx, dead), "c", userText("late")); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("the dead holder appended: %v", err)
	}
	if err := s.Append(Writing(ctx, next), "c", userText("mine")); err != nil {
		t.Fatal(err)
	}
}

// noSuchPID is above Linux's largest pid (2^22).
const noSuchPID = 1<<22 + 1

// Table: who may take a claim another holder has, by its lease and host.
func TestAClaimIsTakenOverOnlyWhenItsHolderIsGone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holder  func() Holder
		elapsed time.Duration // since the claim, against a lease of a minute
		taken   bool
	}{
		{"another host, lease running", elsewhere, 59 * time.Second, false},
		{"another host, lease run out", elsewhere, 61 * time.Second, true},
		{"this process, lease running", NewHolder, 59 * time.Second, false},
		{"this process, lease run out", NewHolder, 61 * time.Second, true},
		{"this node, no such pid", func() Holder { h := NewHolder(); h.PID = noSuchPID; return h }, time.Second, true},
		// another container with the same host name: its pid means nothing here
		{"this host name, another node, no such pid", func() Holder { h := NewHolder(); h.PID, h.Node = noSuchPID, "other-node"; return h }, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newConversation(t)
			ctx := context.Background()
			t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
			s.now = func() time.Time { return t0 }
			if _, err := s.Claim(ctx, "c", tc.holder(), time.Minute); err != nil {
				t.Fatal(err)
			}
			s.now = func() time.Time { return t0.Add(tc.elapsed) }
			_, err := s.Claim(ctx, "c", NewHolder(), time.Minute)
			var held *HeldError
			if tc.taken != (err == nil) || (!tc.taken && !errors.As(err, &held)) {
				t.Fatalf("taken %v, err %v", tc.taken, err)
			}
			// a write without a claim is refused while either holder lives
			if err := s.Append(ctx, "c", userText("x")); !errors.As(err, &held) {
				t.Fatalf("an append without the claim went through: %v", err)
			}
		})
	}
}

// A writer whose claim was taken over appends nothing, keeps nothing and
// cannot renew it; its release leaves the new holder's claim alone.
func TestAWriterWhoseClaimWasTakenOverWritesNothing(t *testing.T) {
	s := newConversation(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return t0 }
	old, err := s.Claim(ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(Writing(ctx, old), "c", userText("before")); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return t0.Add(2 * time.Minute) }
	taker, err := s.Claim(ctx, "c", NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Append(Writing(ctx, old), "c", userText("after"))
	if !errors.Is(err, ErrClaimLost) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())+" on "+taker.Host) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("err = %v", err)
	}
	if err := s.Keep(Writing(ctx, old), "c", Part{Type: ToolResultPart, CallID: "x", Text: "r"}); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("keep: %v", err)
	}
	if err := s.Renew(ctx, "c", old, time.Minute); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("renew: %v", err)
	}
	if err := s.Release(ctx, "c", old); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(Writing(ctx, taker), "c", userText("taker")); err != nil {
		t.Fatalf("the old writer's release freed the taker's claim: %v", err)
	}
	msgs, _ := s.Messages(ctx, "c")
	if kept, _ := s.Kept(ctx, "c"); len(msgs) != 2 || msgs[1].Parts[0].Text != "taker" || len(kept) != 0 {
		t.Fatalf("messages %+v, kept %+v", msgs, kept)
	}
	// released, the claim is free: and a writer that lost it cannot write
	if err := s.Release(ctx, "c", taker); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(Writing(ctx, taker), "c", userText("gone")); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("append after release: %v", err)
	}
	if err := s.Append(ctx, "c", userText("free")); err != nil {
		t.Fatalf("append with no holder: %v", err)
	}
}

func TestClaimRefusesBadInputSayingWhat(t *testing.T) {
	s := newConversation(t)
	ctx := context.Background()
	for _, tc := range []struct {
		id    string
		h     Holder
		lease time.Duration
		want  string
	}{
		{"c", NewHolder(), 0, "the lease must be positive, got 0s"},
		{"c", Holder{PID: 1}, time.Minute, "the holder has no token"},
		{"nope", NewHolder(), time.Minute, "conversation nope: no such conversation"},
	} {
		if _, err := s.Claim(ctx, tc.id, tc.h, tc.lease); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Claim(%q, %+v, %v) = %v, want %q", tc.id, tc.h, tc.lease, err, tc.want)
		}
	}
	if err := s.Keep(ctx, "c", Part{Type: TextPart, Text: "x"}); err == nil || !strings.Contains(err.Error(), `want tool results with call ids, got a "text" part`) {
		t.Errorf("Keep of a text part: %v", err)
	}
}

// A finished call's result is kept at once, survives the process (a new
// store on the file reads it), and goes with the round's append.
func TestKeptResultsLastUntilTheRoundIsAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	_ = s.Create(ctx, Conversation{ID: "c"})
	_ = s.Create(ctx, Conversation{ID: "other"})
	fast := Part{Type: ToolResultPart, CallID: "toolu_fast", Text: "fast <done> & \"ok\"", SpillPath: ".myelin/tool-results/f.txt"}
	if err := s.Keep(ctx, "c", fast); err != nil {
		t.Fatal(err)
	}
	if err := s.Keep(ctx, "other", Part{Type: ToolResultPart, CallID: "o", Text: "o"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := openStore(t, path)
	kept, err := s2.Kept(ctx, "c")
	if err != nil || len(kept) != 1 || kept[0].Text != fast.Text || kept[0].SpillPath != fast.SpillPath || kept[0].CallID != "toolu_fast" {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	if err := s2.Append(ctx, "c", userText("a prompt keeps them")); err != nil {
		t.Fatal(err)
	}
	if kept, _ := s2.Kept(ctx, "c"); len(kept) != 1 {
		t.Fatalf("a message without results removed the kept ones: %+v", kept)
	}
	if err := s2.Append(ctx, "c", Message{Role: User, Parts: []Part{fast}}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := s2.Kept(ctx, "c"); len(kept) != 0 {
		t.Fatalf("the round's append left %+v", kept)
	}
	if kept, _ := s2.Kept(ctx, "other"); len(kept) != 1 {
		t.Fatalf("another conversation's kept results went: %+v", kept)
	}
}

// Two processes creating one conversation at once: the second is told the
// conversation exists, not "UNIQUE constraint failed" (issue 10 §3).
func TestCreatingAConversationThatExistsSaysSo(t *testing.T) {
	s := newConversation(t)
	err := s.Create(context.Background(), Conversation{ID: "c"})
	if !errors.Is(err, ErrExists) || strings.Contains(err.Error(), "UNIQUE") || !strings.Contains(err.Error(), "creating conversation c: a conversation with this id exists already") {
		t.Fatalf("err = %v", err)
	}
	if err := s.Create(context.Background(), Conversation{}); err == nil || !strings.Contains(err.Error(), "its id is empty") {
		t.Fatalf("empty id: %v", err)
	}
}

// Another process holding the write lock makes Append wait (the busy
// timeout), not fail at once with SQLITE_BUSY (issue 10 §4): the
// transaction takes the lock as it begins.
func TestAppendWaitsForAWriteLockHeldByAnotherConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path)
	ctx := context.Background()
	_ = s.Create(ctx, Conversation{ID: "c"})
	if _, err := s.Messages(ctx, "c"); err != nil { // a read first, as a turn does
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `UPDATE conversations SET updated = 'x'`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Append(ctx, "c", userText("waited")) }()
	select {
	case err := <-done:
		t.Fatalf("Append returned while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond): // it waits: let the lock go
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Append failed instead of waiting for the lock: %v", err)
	}
}

// A store of layout 1 or 2 is brought to layout 3 when opened, its
// messages kept, checksummed and counted: they read back, and a new one
// is appended after them.
func TestAnOlderLayoutIsBroughtToLayout3(t *testing.T) {
	for _, fixture := range []string{"layout1.sql", "layout2.sql"} {
		t.Run(fixture, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			script, err := os.ReadFile(filepath.Join("testdata", fixture))
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(string(script)); err != nil {
				t.Fatal(err)
			}
			db.Close()
			s := openStore(t, path)
			ctx := context.Background()
			msgs, err := s.Messages(ctx, "old")
			if err != nil || len(msgs) != 1 || msgs[0].Parts[0].Text != "hello" {
				t.Fatalf("messages %+v, %v", msgs, err)
			}
			h, err := s.Claim(ctx, "old", NewHolder(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(Writing(ctx, h), "old", Message{Role: Assistant, Parts: []Part{{Type: TextPart, Text: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			if c, err := openStore(t, path).Get(ctx, "old"); err != nil || c.Messages != 2 {
				t.Fatalf("conversation %+v, %v", c, err)
			}
			var version int
			if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 3 {
				t.Fatalf("layout %d, %v", version, err)
			}
		})
	}
}
