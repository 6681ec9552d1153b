package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// River's own rescuer does not serve here: it leaves alone a running job
// whose worker has no timeout (a turn may run long), and rescues one with
// a timeout only once the timeout has passed — a dead worker's turn would
// wait as long as the longest turn may run. So each worker process beats
// in myelin_workers (its River client id, and when it last beat), and
// every process with workers gives a running turn job back to the queue
// when the process that took it (the last of its attempted_by) has not
// beaten for a lease: it is dead, or cut off long enough for its claims
// to have run out. The claim stays the one-writer guard: a job given back
// while its worker in fact lives is only snoozed.

// newClientID is this process's River client id: host, pid and a random
// part (a process restarted with the same pid is another).
func newClientID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// beat records that client id is alive, now on the database's clock.
func beat(ctx context.Context, pool *pgxpool.Pool, id string) error {
	_, err := pool.Exec(ctx, `INSERT INTO myelin_workers (id, beat) VALUES ($1, now())
		ON CONFLICT (id) DO UPDATE SET beat = now()`, id)
	if err != nil {
		return fmt.Errorf("workers: recording that %s is alive: %w", id, err)
	}
	return nil
}

// rescue gives back to the queue the running turn jobs whose worker has
// not beaten for lease (and were taken over lease ago, so a worker just
// started has beaten), and forgets workers gone for ten leases. It returns
// how many jobs it gave back.
func rescue(ctx context.Context, pool *pgxpool.Pool, lease time.Duration) (int64, error) {
	tag, err := pool.Exec(ctx, `UPDATE river_job j SET state = 'available', scheduled_at = now()
		WHERE j.kind = $1 AND j.state = 'running' AND j.attempted_at < now() - $2::interval
		AND NOT EXISTS (SELECT 1 FROM myelin_workers w
			WHERE w.id = j.attempted_by[cardinality(j.attempted_by)] AND w.beat > now() - $2::interval)`, Kind, lease)
	if err != nil {
		return 0, fmt.Errorf("workers: giving back the turns of dead workers: %w", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM myelin_workers WHERE beat < now() - $1::interval`, 10*lease); err != nil {
		return 0, fmt.Errorf("workers: forgetting dead workers: %w", err)
	}
	return tag.RowsAffected(), nil
}

// keepAlive beats for client id every third of lease and gives back the
// turns of dead workers at each beat, until ctx ends.
func keepAlive(ctx context.Context, pool *pgxpool.Pool, id string, lease time.Duration, log func(string, ...any)) {
	t := time.NewTicker(max(lease/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := beat(ctx, pool, id); err != nil {
			log("%v", err)
			continue
		}
		if n, err := rescue(ctx, pool, lease); err != nil {
			log("%v", err)
		} else if n > 0 {
			log("gave %d turn(s) of dead workers back to the queue", n)
		}
	}
}
