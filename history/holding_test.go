package history

import (
	"context"
	"errors"
	"testing"
	"time"
)

// renewCounting is a Store that counts its Renew calls.
type renewCounting struct {
	*Memory
	renewed chan struct{}
}

func (s renewCounting) Renew(ctx context.Context, id string, h Holder, lease time.Duration) error {
	err := s.Memory.Renew(ctx, id, h, lease)
	select {
	case s.renewed <- struct{}{}:
	default:
	}
	return err
}

// Holding keeps the claim past its lease by renewing it, and gives it up
// on release.
func TestHoldingRenewsTheClaimPastItsLeaseAndGivesItUpOnRelease(t *testing.T) {
	ctx := context.Background()
	s := renewCounting{&Memory{}, make(chan struct{}, 1)}
	if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const lease = 600 * time.Millisecond
	h, err := s.Claim(ctx, "c", NewHolder(), lease)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	hctx, release := Holding(ctx, s, "c", h, lease)
	if w, ok := WriterOf(hctx); !ok || w.Token != h.Token {
		t.Fatal("the held context does not write as the holder")
	}
	// renewed until past the first lease: the last renewal was just now
	for time.Since(start) <= lease {
		select {
		case <-s.renewed:
		case <-time.After(time.Minute):
			t.Fatal("the claim was not renewed")
		}
	}
	if _, err := s.Claim(ctx, "c", NewHolder(), lease); err == nil {
		t.Fatal("another holder took the claim past its first lease while it was held and renewed")
	}
	release()
	release() // a second release does nothing more
	if _, err := s.Claim(ctx, "c", NewHolder(), lease); err != nil {
		t.Fatalf("the claim was not given up on release: %v", err)
	}
}

// A claim taken over by another holder cancels the held context with
// ErrClaimLost.
func TestHoldingCancelsItsContextWhenTheClaimIsLost(t *testing.T) {
	ctx := context.Background()
	s := &Memory{}
	if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const lease = 30 * time.Millisecond
	h, err := s.Claim(ctx, "c", NewHolder(), lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "c", h); err != nil { // gone behind Holding's back
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "c", NewHolder(), time.Hour); err != nil {
		t.Fatal(err)
	}
	hctx, release := Holding(ctx, s, "c", h, lease)
	defer release()
	select {
	case <-hctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the held context was not cancelled after its claim was taken by another holder")
	}
	if cause := context.Cause(hctx); !errors.Is(cause, ErrClaimLost) {
		t.Fatalf("cancelled by %v, want an error wrapping ErrClaimLost", cause)
	}
}
