package rewind

import (
	"context"
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// lease is how long a hold's claim lasts unrenewed; the hold renews it
// every third of it. A variable for the tests.
var lease = history.DefaultLease

// Hold claims conversation id in store for a move (a rewind, an undo, a
// redo or a switch: what reads it, plans, moves it and puts the files
// back), as a turn claims it: no turn starts while it is held, and none
// that runs lets it be taken. It returns the context to move under
// (history.Writing, with the holder; cancelled, with a cause wrapping
// history.ErrClaimLost, should the claim be lost), renews the claim while
// held, and release, which stops renewing and gives the claim up. While
// another live writer holds id, it fails with that writer's
// *history.HeldError (wrapped): nothing is held.
//
// Rewind, Undo, Redo and Switch take one themselves unless ctx already
// writes as a holder (history.WriterOf), which must then hold id's claim
// (the server takes it with Hold, to check its own turns under it). Hold
// must not be used for a turn: it holds the claim, it writes nothing.
func Hold(ctx context.Context, store history.Store, id string) (context.Context, func(), error) {
	h, err := store.Claim(ctx, id, history.NewHolder(), lease)
	if err != nil {
		return nil, nil, fmt.Errorf("claiming conversation %s to move it: %w", id, err)
	}
	hctx, release := history.Holding(ctx, store, id, h, lease)
	return hctx, release, nil
}

// held runs move under id's claim: under ctx's own holder when it writes
// as one (the caller holds the claim), else under a Hold taken for it.
func held[T any](ctx context.Context, store history.Store, id string, move func(context.Context) (T, Files, error)) (T, Files, error) {
	if _, ok := history.WriterOf(ctx); ok {
		return move(ctx)
	}
	hctx, release, err := Hold(ctx, store, id)
	if err != nil {
		var zero T
		return zero, Files{}, err
	}
	defer release()
	return move(hctx)
}
