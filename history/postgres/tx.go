package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file is the workers' queue's seam into an append's transaction
// (package worker stores a turn's prompt and inserts its job in one
// transaction: both or neither). It holds no queue and must not grow one.

type appendHookKey struct{}

// WithinAppend returns a context under which an Append also runs then in
// its transaction, after the claim check and the messages' insert and
// before the commit: then's error rolls the append back and is Append's.
// then must use only tx, and must not append to the store itself.
func WithinAppend(ctx context.Context, then func(ctx context.Context, tx pgx.Tx) error) context.Context {
	return context.WithValue(ctx, appendHookKey{}, then)
}

// appendHook runs the WithinAppend hook ctx carries, if any, in tx.
func appendHook(ctx context.Context, tx pgx.Tx) error {
	then, _ := ctx.Value(appendHookKey{}).(func(context.Context, pgx.Tx) error)
	if then == nil {
		return nil
	}
	return then(ctx, tx)
}

// Pool is the store's connection pool, for the workers' queue and event
// log (package worker), whose tables live beside the store's (the same
// search_path). They must not touch the store's own tables through it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
