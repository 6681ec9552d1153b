package worker

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/server"
)

var _ server.EventDropper = (*Events)(nil)

// Drop forgets conversation conv's events (server.EventDropper), for a
// conversation deleted: those waiting to be written and every row, with
// its numbering, in one transaction. It drops no other conversation's.
func (e *Events) Drop(ctx context.Context, conv string) error {
	e.mu.Lock()
	p := e.pending[conv]
	e.mu.Unlock()
	if p != nil {
		p.write.Lock() // after a write under way, none after
		defer p.write.Unlock()
		e.mu.Lock()
		p.events = nil
		if p.timer != nil {
			p.timer.Stop()
			p.timer = nil
		}
		e.mu.Unlock()
	}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM myelin_events WHERE conversation = $1`, conv)
		b.Queue(`DELETE FROM myelin_event_seqs WHERE conversation = $1`, conv)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("dropping the events of conversation %s: %w", conv, err)
	}
	return nil
}
