package rewind

import (
	"context"
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// PartsAt is where conversations x and y part, read from their records
// alone: how many first messages they read through the same
// conversation's rows. Each reads its first BaseAt messages through its
// Base, and so on up; two that read messages 1 to n through one
// conversation share them. It is Parting without reading a message (a
// branch list, `history branches`, the API's GET), and agrees with it
// (TestPartsAtAgreesWithPartingOnEveryStore).
func PartsAt(ctx context.Context, store history.Store, x, y history.Conversation) (int, error) {
	xs, err := readsThrough(ctx, store, x)
	if err != nil {
		return 0, err
	}
	ys, err := readsThrough(ctx, store, y)
	if err != nil {
		return 0, err
	}
	at := 0
	for id, n := range xs {
		if m, ok := ys[id]; ok {
			at = max(at, min(n, m))
		}
	}
	return at, nil
}

// readsThrough maps each conversation c reads messages through (itself,
// its Base, and theirs up) to how many of its first messages c reads
// from it.
func readsThrough(ctx context.Context, store history.Store, c history.Conversation) (map[string]int, error) {
	out := map[string]int{c.ID: c.Messages}
	n := c.Messages
	for c.Base != "" && len(out) <= maxBaseDepth {
		n = min(n, c.BaseAt)
		base, err := store.Get(ctx, c.Base)
		if err != nil {
			return nil, fmt.Errorf("reading base %s of conversation %s: %w", c.Base, c.ID, err)
		}
		if _, seen := out[base.ID]; seen {
			break // a loop no store makes: stop rather than spin
		}
		out[base.ID] = n
		c = base
	}
	return out, nil
}

// maxBaseDepth bounds the chain of bases PartsAt follows.
const maxBaseDepth = 1000
