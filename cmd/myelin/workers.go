package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/worker"
)

// defaultWorkers is how many turns a --worker process runs at once unless
// --workers says.
const defaultWorkers = 4

// workerPool sizes the store's connection pool of a --worker process when
// its URL does not (pgxpool's default, 4 or the CPU count, is less than
// the turns it runs at once need), leaving other DSN forms as they are.
func workerPool(dsn string, workers int) string {
	u, err := url.Parse(dsn)
	if err != nil || !isPostgres(dsn) {
		return dsn
	}
	q := u.Query()
	if q.Get("pool_max_conns") == "" {
		q.Set("pool_max_conns", strconv.Itoa(2*workers+4))
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// startWorkers puts api's turns on the workers' queue of the Postgres
// store (docs/scale.md): its events in the database, its turns queued with
// their prompts and run by this process's workers (workers of them at
// once; 0 runs none) or another's. It returns what stops them, in order,
// before the store closes.
func startWorkers(ctx context.Context, api *server.Server, store history.Store, dsn string, workers int, lease time.Duration, stderr io.Writer) (func(), error) {
	pg, ok := store.(*postgres.Store)
	if !ok {
		return nil, errors.New("--worker needs the Postgres store: give --store postgres://user@host:port/database (or MYELIN_STORE)")
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "myelin serve: "+format+"\n", args...) }
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	cfg.MaxConns = int32(workers + 8) // River's producer, notifier and elector, the events' listener
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("workers: connecting to %s: %w", pg, err)
	}
	if err := worker.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	events := worker.NewEvents(pool, worker.EventsOptions{Keep: api.EventsKept, Log: logf})
	q, err := worker.New(pg, pool, api.RunQueued, worker.Options{Workers: workers, Lease: lease, Log: logf, End: api.EndQueued})
	if err != nil {
		events.Close()
		pool.Close()
		return nil, err
	}
	api.Events, api.Queue = events, q
	if err := q.Start(context.WithoutCancel(ctx)); err != nil {
		events.Close()
		pool.Close()
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.Stop(sctx); err != nil {
			logf("stopping the workers: %v", err)
		}
		if err := events.Close(); err != nil {
			logf("writing the last events: %v", err)
		}
		pool.Close()
	}, nil
}
