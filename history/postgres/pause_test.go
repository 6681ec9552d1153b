package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// The store's sessions are ended by the server when they sit idle inside
// a transaction for a lease: a process paused or cut off in the middle of
// a write does not hold its conversation's row lock past it. A DSN that
// sets the timeout keeps its own.
func TestASessionIdleInAWriteIsEndedAfterALease(t *testing.T) {
	open, name := opener(t, nil)
	if v, err := postgres.Setting(open(), "idle_in_transaction_session_timeout"); err != nil || v != "30s" {
		t.Fatalf("idle_in_transaction_session_timeout = %q, %v; want 30s (history.DefaultLease)", v, err)
	}
	s, err := postgres.Open(context.Background(), withParam(t, dsn(t), "idle_in_transaction_session_timeout", "7000"), postgres.Options{Schema: name})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := postgres.Setting(s, "idle_in_transaction_session_timeout"); err != nil || v != "7s" {
		t.Fatalf("with the DSN's own: %q, %v; want 7s", v, err)
	}
}

// A writer paused in the middle of its append, holding the conversation's
// row lock (a frozen process, a partition), does not stop a takeover once
// its lease has run out: the server ends its idle session, the append is
// rolled back whole, and the taker claims and writes. The paused writer,
// resumed, has written nothing.
func TestAWriterPausedInsideItsAppendDoesNotBlockTheTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, _ := pgtest.Schema(t)
	clock := &storetest.Clock{}
	clock.Add(time.Duration(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC).UnixNano()))
	quick := withParam(t, dsn(t), "idle_in_transaction_session_timeout", "200")
	openQuick := func() *postgres.Store {
		s, err := postgres.Open(ctx, quick, postgres.Options{Schema: name, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	paused, taker := openQuick(), openQuick()
	if err := paused.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	old, err := paused.Claim(ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	inside, resume := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	postgres.PauseInWrite(t, "c", func() {
		if calls.Add(1) == 1 { // the paused writer's append alone
			close(inside)
			<-resume
		}
	})
	appended := make(chan error, 1)
	go func() { appended <- paused.Append(history.Writing(ctx, old), "c", storetest.UserText("late")) }()
	<-inside
	clock.Add(2 * time.Minute) // its lease has run out
	next, err := taker.Claim(ctx, "c", history.NewHolder(), time.Minute)
	close(resume)
	if err != nil {
		t.Fatalf("the takeover while the old writer is paused inside its append: %v", err)
	}
	if err := <-appended; err == nil {
		t.Fatal("the paused writer's append went through after the takeover")
	}
	if err := taker.Append(history.Writing(ctx, next), "c", storetest.UserText("taker")); err != nil {
		t.Fatal(err)
	}
	msgs, err := taker.Messages(ctx, "c")
	if err != nil || len(msgs) != 1 || msgs[0].Parts[0].Text != "taker" {
		t.Fatalf("messages %+v, %v; want the taker's alone", msgs, err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

// withParam is dsn (a URL) with query parameter name set to value.
func withParam(t *testing.T, dsn, name, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + as itself
	return u.String()
}
