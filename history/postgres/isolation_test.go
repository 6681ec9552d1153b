package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/storetest"
)

// A database whose default isolation is stricter (a DBA's ALTER DATABASE
// ... SET default_transaction_isolation) does not make a write that waited
// for the conversation's row lock fail with a serialization error: the
// store's writes run at READ COMMITTED, where a write that waited sees
// what the one before it committed. Here a renewal waits for an append
// paused while it holds the lock; both go through.
func TestAWriteThatWaitedForTheLockGoesThroughWhateverTheDefaultIsolation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, name := opener(t, nil)
	strict := withParam(t, dsn(t), "default_transaction_isolation", "repeatable read")
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	app := "myelin-test-" + hex.EncodeToString(b)
	open := func(d string) *postgres.Store {
		s, err := postgres.Open(ctx, d, postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	appender, renewer := open(strict), open(withParam(t, strict, "application_name", app))
	if err := appender.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	h, err := appender.Claim(ctx, "c", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	inside, resume := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	postgres.PauseInWrite(t, "c", func() {
		if calls.Add(1) == 1 {
			close(inside)
			<-resume
		}
	})
	appended, renewed := make(chan error, 1), make(chan error, 1)
	go func() { appended <- appender.Append(history.Writing(ctx, h), "c", storetest.UserText("one")) }()
	<-inside
	go func() { renewed <- renewer.Renew(ctx, "c", h, time.Minute) }()
	watch := connect(t, name)
	for waiting := 0; waiting == 0; { // until the renewal waits for the lock: no time is asserted
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-renewed:
			t.Fatalf("the renewal returned while the append held the lock: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(resume)
	if err := <-appended; err != nil {
		t.Fatalf("the append: %v", err)
	}
	if err := <-renewed; err != nil {
		t.Fatalf("the renewal that waited for the append's lock: %v", err)
	}
}

// A connection lost in the middle of an append (the server ends the
// session: a restart, a failover, a cut network) stores none of it, and
// the store goes on with a new connection: the next append lands after
// what was there before, nothing half written between.
func TestAConnectionLostInsideAnAppendStoresNoneOfIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, name := opener(t, nil)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	app := "myelin-test-" + hex.EncodeToString(b)
	s, err := postgres.Open(ctx, withParam(t, withParam(t, dsn(t), "application_name", app), "pool_max_conns", "1"), postgres.Options{Schema: name})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.UserText("before")); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	postgres.PauseInWrite(t, "c", func() {
		if calls.Add(1) == 1 { // the session is ended while the append holds the lock
			if _, err := connect(t, name).Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
				t.Error(err)
			}
		}
	})
	if err := s.Append(ctx, "c", storetest.SampleMessages()...); err == nil {
		t.Fatal("an append whose connection was lost went through")
	}
	if err := s.Append(ctx, "c", storetest.UserText("after")); err != nil {
		t.Fatalf("the append after a lost connection: %v", err)
	}
	msgs, err := s.Messages(ctx, "c")
	if err != nil || len(msgs) != 2 || msgs[0].Parts[0].Text != "before" || msgs[1].Parts[0].Text != "after" {
		t.Fatalf("messages %+v, %v; want before and after alone", msgs, err)
	}
}
