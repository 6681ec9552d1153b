package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// A holder paused past its lease — on the database's clock, no test clock
// — is taken over by another process, and then appends nothing, keeps
// nothing and cannot renew (fencing); the taker's epoch is larger.
func TestAPausedHolderTakenOverOnTheDatabasesClockWritesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open, _ := opener(t, nil)
	paused, taker := open(), open()
	if err := paused.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	old, err := paused.Claim(ctx, "c", elsewhere(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := paused.Append(history.Writing(ctx, old), "c", storetest.UserText("before the pause")); err != nil {
		t.Fatalf("the holder's append while its lease runs: %v", err)
	}
	var next history.Holder
	for { // until the database's clock has passed the lease: no time is asserted
		next, err = taker.Claim(ctx, "c", history.NewHolder(), time.Minute)
		var held *history.HeldError
		if err == nil || !errors.As(err, &held) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lapsed claim was never taken over: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if next.Epoch <= old.Epoch {
		t.Fatalf("the taker's epoch %d is not above the paused holder's %d", next.Epoch, old.Epoch)
	}
	if err := paused.Append(history.Writing(ctx, old), "c", storetest.UserText("after the pause")); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the paused holder's append: %v; want ErrClaimLost", err)
	}
	if err := paused.Keep(history.Writing(ctx, old), "c", history.Part{Type: history.ToolResultPart, CallID: "x", Text: "late"}); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the paused holder's keep: %v; want ErrClaimLost", err)
	}
	if err := paused.Renew(ctx, "c", old, time.Minute); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the paused holder's renew: %v; want ErrClaimLost", err)
	}
	msgs, err := taker.Messages(ctx, "c")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%d messages, %v; want only the one from before the pause", len(msgs), err)
	}
	if kept, err := taker.Kept(ctx, "c"); err != nil || len(kept) != 0 {
		t.Fatalf("kept %+v, %v", kept, err)
	}
}

// elsewhere is a holder on another host: alive until its lease runs out.
func elsewhere() history.Holder {
	h := history.NewHolder()
	h.Host, h.Node, h.PID = "other-host", "other-node", 4242
	return h
}

// Writers in several processes race for one conversation, each taking the
// claim over from the last whenever it is held (the clock moved past the
// lease), and appending as itself. Every append either lands or is refused
// with ErrClaimLost; none is lost or stored twice; and along the stored
// messages the writers' epochs never go down: once a holder took over, no
// earlier holder wrote again.
func TestRacingWritersNeverWriteUnderAnOlderEpoch(t *testing.T) {
	ctx := context.Background()
	clock := &storetest.Clock{}
	clock.Add(time.Duration(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC).UnixNano()))
	open, _ := opener(t, clock.Now)
	first := open()
	if err := first.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 4, 15
	var mu sync.Mutex
	landed := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := open()
		wg.Go(func() {
			for r := range rounds {
				h, err := s.Claim(ctx, "c", elsewhere(), time.Minute)
				var held *history.HeldError
				if errors.As(err, &held) {
					clock.Add(2 * time.Minute) // the holder's lease runs out: take over
					h, err = s.Claim(ctx, "c", elsewhere(), time.Minute)
				}
				if errors.As(err, &held) {
					continue // another writer took it over first
				}
				if err != nil {
					errs <- err
					return
				}
				for k := range 2 {
					text := fmt.Sprintf("epoch %d writer %d round %d append %d", h.Epoch, w, r, k)
					err := s.Append(history.Writing(ctx, h), "c", storetest.UserText(text))
					if errors.Is(err, history.ErrClaimLost) {
						break
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					landed[text] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	msgs, err := open().Messages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(landed) || len(msgs) == 0 {
		t.Fatalf("%d messages stored, %d appends landed", len(msgs), len(landed))
	}
	var last int64
	for i, m := range msgs {
		text := m.Parts[0].Text
		if !landed[text] {
			t.Fatalf("message %d %q was stored but its append did not land", i+1, text)
		}
		delete(landed, text) // stored twice would fail here the second time
		epoch, err := strconv.ParseInt(strings.Fields(text)[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if epoch < last {
			t.Fatalf("message %d was written under epoch %d after epoch %d had written", i+1, epoch, last)
		}
		last = epoch
	}
}

// A holder's Release under an epoch it no longer holds — the same holder
// claimed the conversation again since (released, or taken over and back)
// — leaves the newer claim alone, as its Renew and Append under that
// epoch are refused: the epoch, not the token alone, names a claim.
func TestAReleaseUnderAnEarlierEpochLeavesTheNewerClaim(t *testing.T) {
	ctx := context.Background()
	open, _ := opener(t, nil)
	s := open()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	h := history.NewHolder()
	first, err := s.Claim(ctx, "c", h, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "c", first); err != nil {
		t.Fatal(err)
	}
	again, err := s.Claim(ctx, "c", h, time.Minute)
	if err != nil || again.Epoch <= first.Epoch {
		t.Fatalf("claimed again: epoch %d after %d, %v", again.Epoch, first.Epoch, err)
	}
	if err := s.Renew(ctx, "c", first, time.Minute); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("a renew under the earlier epoch: %v; want ErrClaimLost", err)
	}
	if err := s.Release(ctx, "c", first); err != nil {
		t.Fatal(err)
	}
	var held *history.HeldError
	if _, err := open().Claim(ctx, "c", history.NewHolder(), time.Minute); !errors.As(err, &held) || held.Holder.Epoch != again.Epoch {
		t.Fatalf("another holder's claim after a release under the earlier epoch: %v; want a HeldError naming epoch %d", err, again.Epoch)
	}
	if err := s.Append(history.Writing(ctx, again), "c", storetest.UserText("still mine")); err != nil {
		t.Fatalf("the newer claim's append: %v", err)
	}
}
