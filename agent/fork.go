package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/myelin-run/myelin/history"
)

// ErrNoForks is wrapped by Fork's error when the agent's store keeps no
// forks (it does not implement history.Brancher).
var ErrNoForks = errors.New("the history store keeps no forks")

// Fork starts a new conversation that continues conversation id from its
// first at messages (at < 0: all of them), shared with it, not copied
// (history.Brancher), and returns the new id. The fork keeps id's system
// prompt and, read up to at, the same messages and context records, so
// that its next request begins byte for byte as id's did at that point
// and the provider's prompt cache holds it (docs/branches.md). It needs no
// claim on id: a fork may be made while id's turn runs.
func (a *Agent) Fork(ctx context.Context, id string, at int) (string, error) {
	return Fork(ctx, a.Store, id, at)
}

// Fork is Agent.Fork on store, for a program that forks without an agent
// (`myelin history fork`).
//
// A point inside a round — after an answer with tool calls, before their
// results — is refused with an error wrapping history.ErrInsideRound that
// names the points on either side: the fork's next turn would take it for
// a round a crash stopped and run its calls again (agent--delegate would
// start another subagent) or answer them as interrupted. At the end by
// default (at < 0) while a round is in flight, the fork is made before
// the answer whose calls run (history.BeforeRound); its record's BaseAt
// says which point it took. Either reads only the messages around the
// point (history.ReadPoint: through the store's RangeReader, a few
// messages whatever id's length), so that a fork costs about what the
// store's own Fork, which reads none, costs (docs/performance.md).
func Fork(ctx context.Context, store history.Store, id string, at int) (string, error) {
	b, ok := store.(history.Brancher)
	if !ok {
		return "", fmt.Errorf("forking conversation %s: %w", id, ErrNoForks)
	}
	p, err := history.ReadPoint(ctx, store, id, at)
	if err != nil {
		return "", fmt.Errorf("forking conversation %s: %w", id, err)
	}
	if at < 0 {
		at = p.BeforeRound()
	} else if err := p.InsideRound(); err != nil {
		return "", fmt.Errorf("forking conversation %s at %w", id, err)
	}
	c, err := b.Fork(ctx, history.Conversation{ID: NewID(), Base: id, BaseAt: at})
	if err != nil {
		return "", err
	}
	return c.ID, nil
}
