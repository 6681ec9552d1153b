package postgres_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// A switch locks its conversation, then its branch; a rewind its
// conversation, then the forks it points elsewhere. Another transaction
// that holds that second record and then waits for the conversation's
// (here made by hand; in the store, a rewind of a conversation both share
// messages of, which locks it and then the records it points elsewhere)
// closes a cycle, and the server ends the switch's or rewind's
// transaction to break it: it is tried again once the other is done, and
// goes through, where it failed with the deadlock before. Not run in
// parallel (it pauses every write of "c").
func TestASwitchOrRewindEndedToBreakADeadlockIsTriedAgain(t *testing.T) {
	old := storetest.Texts(storetest.Numbered("c", 4))
	t.Run("switch", func(t *testing.T) {
		endedByADeadlock(t, "c~1", func(ctx context.Context, s *postgres.Store) error {
			return s.Switch(ctx, "c", "c~1")
		}, map[string][]string{"c": old, "c~1": old[:2], "f": old[:2]})
	})
	t.Run("rewind", func(t *testing.T) {
		endedByADeadlock(t, "f", func(ctx context.Context, s *postgres.Store) error {
			_, err := s.Rewind(ctx, "c", 1)
			return err
		}, map[string][]string{"c": old[:1], "c~1": old, "c~2": old[:2], "f": old[:2]})
	})
}

// endedByADeadlock runs op, a write of conversation c that locks record
// second after c's, into a deadlock with another transaction, on c of 4
// messages rewound to 2 (its branch c~1) and f, a fork of c at 2; and
// checks that op was tried again and done: every conversation then reads
// as want says.
func endedByADeadlock(t *testing.T, second string, op func(ctx context.Context, s *postgres.Store) error, want map[string][]string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, schemaDSN := pgtest.Schema(t)
	s, err := postgres.Open(ctx, dsn(t), postgres.Options{Schema: name})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "c", storetest.Numbered("c", 4)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctx, "c", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 2}); err != nil {
		t.Fatal(err)
	}

	other, err := pgx.Connect(ctx, schemaDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.WithoutCancel(ctx))
	// where the server lets it (a superuser), the other transaction waits
	// long before it looks for a deadlock: the write under test, which
	// waits first, is the one ended, whatever the timing
	_, _ = other.Exec(ctx, `SET deadlock_timeout = '30s'`)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var xid string
	if err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, second).Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}

	inside, resume := make(chan struct{}), make(chan struct{})
	var tries atomic.Int32
	postgres.PauseInWrite(t, "c", func() {
		if tries.Add(1) == 1 { // op's first try, holding c's lock
			close(inside)
			<-resume
		}
	})
	done := make(chan error, 1)
	go func() { done <- op(ctx, s) }()
	<-inside
	close(resume)
	// op waits for the second record, which tx holds
	for waiting := false; !waiting; {
		if err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted AND transactionid::text = $1)`, xid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if !waiting {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// tx waits for c's record, which op holds: the cycle
	if err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = 'c' FOR UPDATE`).Scan(new(int)); err != nil {
		t.Fatalf("the other transaction, waiting for c's record: %v; want op's ended to break the deadlock, not it", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a write ended by the server to break a deadlock: %v; want it tried again and done", err)
	}
	if n := tries.Load(); n < 2 {
		t.Fatalf("the write ran %d times; want it tried again after the deadlock", n)
	}
	for id, w := range want {
		msgs, err := s.Messages(ctx, id)
		if err != nil || !slices.Equal(storetest.Texts(msgs), w) {
			t.Fatalf("after the write, %s reads %v, %v; want %v", id, storetest.Texts(msgs), err, w)
		}
	}
}
