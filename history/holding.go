package history

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Holding returns ctx writing as h (Writing), h having just taken
// conversation id's claim in store for lease, and keeps that claim: it
// renews it every third of the lease until release is called, and
// cancels the returned context with the renewal's error (wrapping
// ErrClaimLost) when the claim is lost, since every write under it would
// then be refused. Another renewal error (a store locked for a while) is
// tried again at the next beat: the lease is three beats long. release
// stops the renewals and gives the claim up (Release); calling it more
// than once does nothing more. A turn (agent) and a move of a
// conversation (package rewind) hold their claim through it; it must not
// be given a holder that did not take id's claim.
func Holding(ctx context.Context, store Store, id string, h Holder, lease time.Duration) (held context.Context, release func()) {
	hctx, cancel := context.WithCancelCause(Writing(ctx, h))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if err := store.Renew(context.WithoutCancel(hctx), id, h, lease); errors.Is(err, ErrClaimLost) {
				cancel(err)
				return
			}
		}
	})
	var once sync.Once
	return hctx, func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			cancel(nil)
			_ = store.Release(context.WithoutCancel(ctx), id, h)
		})
	}
}
