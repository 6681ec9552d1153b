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
// wait as long as the longest turn may run — and it marks a job that was
// cancelled while it ran cancelled as it rescues it, with no worker ending
// the turn, so the queue keeps it off the turns' jobs altogether
// (riverNeverRescues). So each worker process beats
// in myelin_workers (its River client id, and when it last beat), and
// every process with workers gives a running turn job back to the queue
// when the process that took it (the last of its attempted_by) has not
// beaten for a lease: it is dead, or cut off long enough for its claims
// to have run out. The claim stays the one-writer guard: a job given back
// while its worker in fact lives is only snoozed; and the job's id is the
// guard of the job (rescue).

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
//
// A job is given back as a new job (a new id) with what the old one
// carried — its args, attempts, errors and metadata (a cancel asked for
// while its worker was dead goes with it) — and the old one is discarded
// in the same transaction, naming the new. The job's id is the fence of
// its attempts: River finishes a job (completed, retried, snoozed,
// cancelled, discarded) by its id and only while it is running, whatever
// attempt runs it, so a worker given up for dead that in fact lived (paused
// past its lease) and returns later could otherwise finish the attempt of
// the worker that took the job over — and, were that one dead, leave the
// turn with no job and no one to finish it. Its job discarded, whatever it
// reports changes nothing.
func rescue(ctx context.Context, pool *pgxpool.Pool, lease time.Duration) (int64, error) {
	tag, err := pool.Exec(ctx, `WITH dead AS (
			SELECT j.*, nextval(pg_get_serial_sequence('river_job', 'id')) AS new_id FROM river_job j
			WHERE j.kind = $1 AND j.state = 'running' AND j.attempted_at < now() - $2::interval
			AND NOT EXISTS (SELECT 1 FROM myelin_workers w
				WHERE w.id = j.attempted_by[cardinality(j.attempted_by)] AND w.beat > now() - $2::interval)
			FOR UPDATE OF j SKIP LOCKED
		), old AS (
			UPDATE river_job j SET state = 'discarded', finalized_at = now(),
				errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
					'error', format('given back: worker %s stopped beating; the turn goes on as job %s',
						j.attempted_by[cardinality(j.attempted_by)], d.new_id))),
				metadata = j.metadata || jsonb_build_object('`+givenBackAs+`', d.new_id)
			FROM dead d WHERE j.id = d.id
			RETURNING j.id
		)
		INSERT INTO river_job (id, args, attempt, attempted_at, attempted_by, created_at, errors, kind, max_attempts,
			metadata, priority, queue, scheduled_at, state, tags, unique_key, unique_states)
		SELECT d.new_id, d.args, d.attempt, d.attempted_at, d.attempted_by, d.created_at, d.errors, d.kind, d.max_attempts,
			(d.metadata - 'cancel_attempted_at') || CASE WHEN d.metadata ? 'cancel_attempted_at'
				THEN jsonb_build_object('`+cancelAsked+`', d.metadata->'cancel_attempted_at') ELSE '{}'::jsonb END,
			d.priority, d.queue, now(), 'available', d.tags, d.unique_key, d.unique_states
		FROM dead d JOIN old o ON o.id = d.id`, Kind, lease)
	if err != nil {
		return 0, fmt.Errorf("workers: giving back the turns of dead workers: %w", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM myelin_workers WHERE beat < now() - $1::interval`, 10*lease); err != nil {
		return 0, fmt.Errorf("workers: forgetting dead workers: %w", err)
	}
	return tag.RowsAffected(), nil
}

// cancelAsked is the key of a given-back job's metadata that carries a
// cancel asked for while its dead worker ran it: River's own key
// (cancel_attempted_at) moved, because River turns a job carrying its
// key that is snoozed or retried into a cancelled one — without the turn
// being ended — and the worker that takes the copy over snoozes it while
// the dead worker's claim has not run out, or retries it on an error of
// its end (TestACancelledTurnWhoseDeadWorkersClaimIsStillHeldIsEndedOnceItRunsOut).
const cancelAsked = "myelin:cancel_asked"

// givenBackAs is the key of a given-back job's metadata naming the job it
// goes on as.
const givenBackAs = "myelin:given_back_as"

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
