package worker

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrationLock is the advisory lock key under which processes starting
// at once bring the queue's and events' tables up one after another.
const migrationLock = 0x6d79656c696e // "myelin"

// Migrate brings the database pool reaches to the workers' layout: River's
// tables (its own migrations, rivermigrate), the workers' beats and the
// events' tables, made
// beside the store's in the connection's search_path. Processes starting
// at once migrate one after another (an advisory lock); a database
// migrated already is left as it is.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("workers: the queue's migrations: %w", err)
	}
	// River's migrations each take their own transaction (an enum value
	// added cannot be used in the one adding it): a session's advisory
	// lock, on a connection of its own, keeps processes one at a time
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("workers: bringing the queue's and events' tables up: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("workers: bringing the queue's and events' tables up: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	if _, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		err = fmt.Errorf("River's tables: %w", err)
	} else {
		_, err = conn.Exec(ctx, `
			CREATE TABLE IF NOT EXISTS myelin_event_seqs (
				conversation text PRIMARY KEY,
				last bigint NOT NULL
			);
			CREATE TABLE IF NOT EXISTS myelin_workers (
				id text PRIMARY KEY,
				beat timestamptz NOT NULL
			);
			CREATE TABLE IF NOT EXISTS myelin_events (
				conversation text NOT NULL,
				seq bigint NOT NULL,
				type text NOT NULL,
				data bytea NOT NULL,
				PRIMARY KEY (conversation, seq)
			)`)
	}
	if err != nil {
		return fmt.Errorf("workers: bringing the queue's and events' tables up: %w", err)
	}
	return nil
}
