package rewind_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// storeBrancher is a store that keeps branches, as every store here does.
type storeBrancher interface {
	history.Store
	history.Brancher
}

// hookStore runs after once, after the first read of a conversation's
// messages, and counts the renewals of claims.
type hookStore struct {
	storeBrancher
	once   sync.Once
	after  func()
	renews atomic.Int64
}

func (s *hookStore) Messages(ctx context.Context, id string) ([]history.Message, error) {
	msgs, err := s.storeBrancher.Messages(ctx, id)
	s.once.Do(s.after)
	return msgs, err
}

func (s *hookStore) Renew(ctx context.Context, id string, h history.Holder, d time.Duration) error {
	s.renews.Add(1)
	return s.storeBrancher.Renew(ctx, id, h, d)
}

func said(role history.Role, s string) history.Message {
	return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

// A turn that tries to start between a move's read of the conversation
// and its move is refused (the move holds the claim from before its
// read): an undo, a rewind or a redo never moves by a plan made from
// messages that changed since (review S1).
func TestATurnCannotStartBetweenAMovesReadAndItsMove(t *testing.T) {
	moves := map[string]func(ctx context.Context, s history.Store) (string, error){
		"undo": func(ctx context.Context, s history.Store) (string, error) {
			br, _, err := rewind.Undo(ctx, s, "c", rewind.Options{})
			return br.ID, err
		},
		"rewind": func(ctx context.Context, s history.Store) (string, error) {
			br, _, err := rewind.Rewind(ctx, s, "c", 0, rewind.Options{})
			return br.ID, err
		},
	}
	for _, ns := range stores(t) {
		for name, move := range moves {
			t.Run(ns.name+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				id := "c"
				// each subtest its own store content: the conversation
				// is made afresh under a new id space
				base := ns.store.(storeBrancher)
				if c, err := base.Get(ctx, id); err == nil && c.ID == id {
					if d, ok := base.(history.Deleter); ok {
						if err := d.Delete(ctx, id); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := base.Create(ctx, history.Conversation{ID: id}); err != nil {
					t.Fatal(err)
				}
				if err := base.Append(ctx, id, said(history.User, "one"), said(history.Assistant, "1")); err != nil {
					t.Fatal(err)
				}
				var turnErr error
				s := &hookStore{storeBrancher: base}
				s.after = func() {
					h, err := base.Claim(ctx, id, history.NewHolder(), time.Minute)
					if err != nil {
						turnErr = err
						return
					}
					defer base.Release(ctx, id, h)
					turnErr = base.Append(history.Writing(ctx, h), id, said(history.User, "two"), said(history.Assistant, "2"))
				}
				br, err := move(ctx, s)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var held *history.HeldError
				if !errors.As(turnErr, &held) {
					t.Fatalf("a turn started between the %s's read and its move: its claim gave %v, want a *history.HeldError (the move holds the claim)", name, turnErr)
				}
				b, err := base.Get(ctx, br)
				if err != nil || b.Messages != 2 {
					t.Fatalf("the %s's branch %s holds %d messages (%v), want the 2 of the one turn it read", name, br, b.Messages, err)
				}
			})
		}
	}
}

// A hold renews its claim while held, so that a move longer than the
// lease keeps it, and gives it up at release (review S2).
func TestAHoldRenewsItsClaimWhileHeldAndReleasesIt(t *testing.T) {
	defer rewind.SetLease(30 * time.Millisecond)()
	ctx := context.Background()
	base := &history.Memory{}
	if err := base.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	s := &hookStore{storeBrancher: base, after: func() {}}
	hctx, release, err := rewind.Hold(ctx, s, "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := history.WriterOf(hctx); !ok {
		t.Fatal("the hold's context writes as no holder")
	}
	for deadline := time.Now().Add(10 * time.Second); s.renews.Load() < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the hold renewed its claim %d times in 10 s with a lease of 30 ms, want it renewed every third of it", s.renews.Load())
		}
	}
	var held *history.HeldError
	if _, err := base.Claim(ctx, "c", history.NewHolder(), time.Minute); !errors.As(err, &held) {
		t.Fatalf("another writer's claim while the hold is held gave %v, want a *history.HeldError", err)
	}
	if _, _, err := rewind.Hold(ctx, s, "c"); !errors.As(err, &held) {
		t.Fatalf("a second hold gave %v, want a *history.HeldError naming the first", err)
	}
	release()
	if err := hctx.Err(); err == nil {
		t.Fatal("the hold's context is not done after release")
	}
	if _, err := base.Claim(ctx, "c", history.NewHolder(), time.Minute); err != nil {
		t.Fatalf("a claim after the hold was released failed: %v", err)
	}
}
