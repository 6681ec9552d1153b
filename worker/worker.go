// Package worker runs queued turns on any of many processes sharing a
// Postgres store (docs/scale.md): a turn started through the API of any of
// them is stored with its job in one transaction (Queue.Enqueue, the
// server's TurnQueue), and one worker — of this process or another —
// continues it (server.RunQueued, agent.Continue). River
// (github.com/riverqueue/river) delivers the jobs; a job carries ids and
// the turn's own settings, never content.
//
// The store's claim (a lease fenced by an epoch) is the one-writer guard,
// not River: a job whose conversation a live writer holds is snoozed and
// tried again, and the rescue of a job whose worker died (it stopped
// beating) only delivers it again, as a new job: the next worker takes
// the claim once it has expired, answers what the dead one left (contract
// §7) and goes on, and the worker given up for dead, were it alive, can
// no longer finish the job (rescue.go). A worker whose claim was lost
// never completes its job. It also keeps the
// conversations' events (Events), so that a watcher of any process follows
// a turn run by another.
//
// It must not decide in one process's memory whether a conversation has a
// turn queued (River's unique jobs decide, in the database), nor carry a
// prompt or a result in a job or a notification.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/server"
)

// Kind is the River kind of a turn's job.
const Kind = "myelin.turn"

// turnArgs is a turn's job: finish turn Turn of Conversation. One
// conversation has at most one such job queued or running (unique by
// conversation, in the database).
type turnArgs struct {
	Conversation string `json:"conversation" river:"unique"`
	server.QueuedTurn
}

func (turnArgs) Kind() string { return Kind }

// active are the states of a job queued or running: a conversation has
// one job at most in them.
var active = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}

func (turnArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: maxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: active}}
}

// maxAttempts bounds how often a turn's job is tried (a snooze while
// another writer holds the conversation is not an attempt; a rescue after
// its worker died is).
const maxAttempts = 50

// Options tune a Queue; the zero value queues turns and runs none.
type Options struct {
	// Workers is how many turns this process runs at once; 0 runs none
	// (the process only queues turns and serves their events).
	Workers int
	// Lease is the conversations' claim lease (agent.Agent.Lease); a job
	// whose worker has not beaten for a lease is given back to the queue
	// (rescue.go). 0 means history.DefaultLease.
	Lease time.Duration
	// Poll is how often an idle worker looks for jobs besides River's
	// notifications; 0 means River's default.
	Poll time.Duration
	// Log gets what no caller sees (a job that failed, to be tried again).
	Log func(format string, args ...any)
	// End ends a turn cancelled while it was running on a worker that
	// died (server.Server.EndQueued: the conversation left valid and
	// turn.finished reported); the worker that takes its job over calls it
	// instead of running the turn. nil ends it with agent.EndCancelled
	// alone, reporting nothing.
	End func(ctx context.Context, conv string, t server.QueuedTurn) error
}

// A job whose worker died is given back to the queue once that worker has
// not beaten for a lease (rescue.go): River's own rescue waits for a job
// timeout, and a turn has none.

// Queue is the workers' queue on one database: a server.TurnQueue, and,
// with Options.Workers, the workers of this process. Start starts them;
// Stop stops them.
type Queue struct {
	store   history.Store // the Postgres store: it runs postgres.WithinAppend's hook in its append transaction
	pool    *pgxpool.Pool
	client  *river.Client[pgx.Tx]
	log     func(format string, args ...any)
	id      string // this process's River client id
	lease   time.Duration
	workers int
	stop    context.CancelFunc // ends keepAlive
	alive   chan struct{}      // closed when keepAlive has returned
}

var _ server.TurnQueue = (*Queue)(nil)

// New makes the queue on pool (the store's, postgres.Store.Pool: the
// jobs are inserted in the store's append transactions), whose tables
// Migrate made. run runs a turn's job (server.Server.RunQueued): a
// *history.HeldError from it snoozes the job until the holder's lease
// ends, any other error has it tried again later.
func New(store history.Store, pool *pgxpool.Pool, run func(ctx context.Context, conv string, t server.QueuedTurn) error, opts Options) (*Queue, error) {
	lease := opts.Lease
	if lease <= 0 {
		lease = history.DefaultLease
	}
	q := &Queue{store: store, pool: pool, log: opts.Log, id: newClientID(), lease: lease, workers: opts.Workers}
	if q.log == nil {
		q.log = func(string, ...any) {}
	}
	workers := river.NewWorkers()
	end := opts.End
	if end == nil {
		end = func(ctx context.Context, conv string, t server.QueuedTurn) error {
			return endCancelled(ctx, store, lease, conv, t)
		}
	}
	if err := river.AddWorkerSafely(workers, &turnWorker{run: run, end: end, lease: lease, log: q.log}); err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	cfg := &river.Config{
		ID:         q.id,
		Workers:    workers,
		JobTimeout: -1, // a turn may run long: its own limits bound it
		// River's own rescuer stays out of the turns' jobs: it would mark
		// a job cancelled while it ran, once running longer than this,
		// cancelled as it rescued it, without the turn being ended
		// (agent.EndCancelled) — the conversation keeping a call with no
		// result, and no one to finish the turn. The workers' own rescue
		// (rescue.go) gives such a job back to a worker, which ends it
		// (TestRiversOwnRescuerNeverCancelsATurnsJob).
		RescueStuckJobsAfter: riverNeverRescues,
		RetryPolicy:          retryPolicy{},
		MaxAttempts:          maxAttempts,
		FetchPollInterval:    opts.Poll,
		FetchCooldown:        min(opts.Poll, 100*time.Millisecond),
		Logger:               nil,
	}
	if opts.Workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers}}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	q.client = client
	return q, nil
}

// riverNeverRescues is River's stuck-job horizon as the queue sets it:
// past any turn's life (a hundred years), so that River's rescuer never
// takes a turn's job (Queue's river.Config).
const riverNeverRescues = 100 * 365 * 24 * time.Hour

// Start starts this process's workers (none without Options.Workers):
// they beat, give back the turns of dead workers, and take jobs.
func (q *Queue) Start(ctx context.Context) error {
	if q.workers > 0 {
		if err := beat(ctx, q.pool, q.id); err != nil {
			return err
		}
		kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		q.stop, q.alive = cancel, make(chan struct{})
		go func() {
			defer close(q.alive)
			keepAlive(kctx, q.pool, q.id, q.lease, q.log)
		}()
	}
	if q.workers == 0 {
		return nil // River starts no client without queues: this one only inserts and cancels
	}
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("workers: starting: %w", err)
	}
	return nil
}

// Stop stops the workers: it takes no more jobs and waits for their
// running turns until ctx ends, then cancels them (each stores what it
// did; the job is tried again and finds the turn ended). A server that
// stops hands its running turns back first (server.Server.Shutdown: each
// job goes back to the queue at once, for another worker), so Stop waits
// for little.
func (q *Queue) Stop(ctx context.Context) error {
	if q.workers == 0 {
		return nil
	}
	err := q.client.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		err = q.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	if q.stop != nil {
		q.stop()
		<-q.alive
	}
	return err
}

// Enqueue stores prompt as conversation conv's next message and inserts
// turn t's job in the same transaction (server.TurnQueue).
func (q *Queue) Enqueue(ctx context.Context, conv string, t server.QueuedTurn, prompt history.Message) error {
	var queued *QueuedBy
	inserted := false
	hook := postgres.WithinAppend(ctx, func(ctx context.Context, tx pgx.Tx) error {
		res, err := q.client.InsertTx(ctx, tx, turnArgs{Conversation: conv, QueuedTurn: t}, nil)
		if err != nil {
			return fmt.Errorf("queueing turn %s of conversation %s: %w", t.Turn, conv, err)
		}
		if res.UniqueSkippedAsDuplicate {
			queued = &QueuedBy{turn: turnOf(res.Job)}
			return queued // rolls the prompt back
		}
		inserted = true
		return nil
	})
	err := q.store.Append(hook, conv, prompt)
	if errors.As(err, &queued) {
		return &server.QueuedError{Conversation: conv, Turn: queued.turn}
	}
	if err == nil && !inserted {
		return fmt.Errorf("queueing turn %s of conversation %s: the store stored the prompt without the job (workers need the Postgres store)", t.Turn, conv)
	}
	return err
}

// QueuedBy is the error that rolls back a prompt whose conversation has a
// turn queued already.
type QueuedBy struct{ turn string }

// Error names the turn queued or running.
func (e *QueuedBy) Error() string { return "turn " + e.turn + " is queued or running" }

// turnOf is the turn a job carries.
func turnOf(j *rivertype.JobRow) string { return turnArgsOf(j).Turn }

// turnArgsOf is what a job carries.
func turnArgsOf(j *rivertype.JobRow) turnArgs {
	var a turnArgs
	if j != nil {
		_ = json.Unmarshal(j.EncodedArgs, &a)
	}
	return a
}

// job is conversation conv's job queued or running, nil when none.
func (q *Queue) job(ctx context.Context, conv string) (*rivertype.JobRow, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(Kind).States(active...).
		Where("args->>'conversation' = @conv", river.NamedArgs{"conv": conv}).First(1))
	if err != nil {
		return nil, fmt.Errorf("looking up the queued turn of conversation %s: %w", conv, err)
	}
	if len(res.Jobs) == 0 {
		return nil, nil
	}
	return res.Jobs[0], nil
}

// Pending names conversation conv's turn queued or running.
func (q *Queue) Pending(ctx context.Context, conv string) (string, error) {
	j, err := q.job(ctx, conv)
	if err != nil || j == nil {
		return "", err
	}
	return turnOf(j), nil
}

// Cancel cancels turn tid of conversation conv: a running one through
// River (its worker's context ends, the turn stores what it did and says
// so in its events), a queued one at once — the conversation is then left
// valid by agent.EndCancelled (the calls of a worker that died mid-turn
// answered, then the cut answer), and before reports that no worker will
// report it.
func (q *Queue) Cancel(ctx context.Context, conv, tid string) (found, before bool, err error) {
	j, err := q.job(ctx, conv)
	if err != nil || j == nil || turnOf(j) != tid {
		return false, false, err
	}
	return q.cancel(ctx, conv, tid, j)
}

// cancel cancels turn tid of conversation conv, whose job was j when it
// was looked up. A job given back meanwhile (rescue) goes on as another:
// the cancel follows it there.
func (q *Queue) cancel(ctx context.Context, conv, tid string, j *rivertype.JobRow) (found, before bool, err error) {
	for range 8 {
		row, err := q.client.JobCancel(ctx, j.ID)
		if err != nil {
			return false, false, fmt.Errorf("cancelling turn %s of conversation %s: %w", tid, conv, err)
		}
		if givenBack(row.Metadata) {
			if j, err = q.job(ctx, conv); err != nil || j == nil || turnOf(j) != tid {
				return false, false, err
			}
			continue
		}
		if row.State != rivertype.JobStateCancelled {
			return true, false, nil // running: its worker ends it
		}
		if err := endCancelled(ctx, q.store, q.lease, conv, turnArgsOf(row).QueuedTurn); err != nil {
			return true, true, fmt.Errorf("answering cancelled turn %s of conversation %s: %w", tid, conv, err)
		}
		return true, true, nil
	}
	return false, false, fmt.Errorf("cancelling turn %s of conversation %s: its job was given back by dead workers again and again while it was cancelled; try again", tid, conv)
}

// givenBack reports whether a job's metadata says it was given back
// (rescue) and goes on as another job.
func givenBack(metadata []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(metadata, &m) == nil && m[givenBackAs] != nil
}

// endCancelled ends turn t of conversation conv, cancelled while no
// worker ran it, with agent.EndCancelled.
func endCancelled(ctx context.Context, store history.Store, lease time.Duration, conv string, t server.QueuedTurn) error {
	a := &agent.Agent{Store: store, MaxRounds: t.MaxRounds, Lease: lease}
	return a.EndCancelled(ctx, conv)
}

// cancelAttempted reports whether a cancel of the job came while it was
// running (River's JobCancel notes it in the job's metadata; rescue moves
// it to cancelAsked in the copy it gives back): a job given back after
// its worker died then is to be ended, not run.
func cancelAttempted(metadata []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(metadata, &m) == nil && (m["cancel_attempted_at"] != nil || m[cancelAsked] != nil)
}

// turnWorker works turns' jobs.
type turnWorker struct {
	river.WorkerDefaults[turnArgs]
	run   func(ctx context.Context, conv string, t server.QueuedTurn) error
	end   func(ctx context.Context, conv string, t server.QueuedTurn) error
	lease time.Duration
	log   func(format string, args ...any)
}

func (w *turnWorker) Work(ctx context.Context, job *river.Job[turnArgs]) error {
	var err error
	if cancelAttempted(job.Metadata) {
		// cancelled while its worker was dead (rescue.go gave it back)
		if err = w.end(ctx, job.Args.Conversation, job.Args.QueuedTurn); err == nil {
			return river.JobCancel(fmt.Errorf("turn %s of conversation %s was cancelled while its worker was dead", job.Args.Turn, job.Args.Conversation))
		}
	} else {
		err = w.run(ctx, job.Args.Conversation, job.Args.QueuedTurn)
	}
	var limited *server.RateLimitedError
	if errors.As(err, &limited) {
		// its request would wait long at its key's rate limit: the turn
		// stopped without ending, and waits in the queue — not as an
		// attempt — until the limit allows it, while this worker runs
		// other keys' turns; whichever worker takes it then goes on
		w.log("turn %s of conversation %s: back in the queue until %s, its key's rate limit", job.Args.Turn, job.Args.Conversation, limited.Until.UTC().Format(time.RFC3339))
		return river.JobSnooze(max(time.Until(limited.Until), 0))
	}
	if errors.Is(err, agent.ErrHandedOver) {
		// this process stops (server.Server.Shutdown): the turn is not
		// ended, and goes back to the queue at once, not as an attempt,
		// for another worker to continue; this one reports nothing more
		// of it (its claim was released as the turn stopped)
		w.log("turn %s of conversation %s: handed back to the queue as this process stops", job.Args.Turn, job.Args.Conversation)
		return river.JobSnooze(0)
	}
	var held *history.HeldError
	if errors.As(err, &held) {
		// a live writer has it (a worker whose job was delivered again
		// while it runs, or a CLI run): try when its lease would end
		return river.JobSnooze(snoozeFor(time.Until(held.Expires), w.lease))
	}
	if errors.Is(err, history.ErrClaimLost) {
		// another writer took the conversation over: this worker was
		// given up for dead, and its job given back (rescue: then this
		// job is discarded, and what it reports changes nothing) — or a
		// writer that is no worker took it. The turn has not ended: its
		// job waits for whoever holds it now, never completed here
		w.log("turn %s of conversation %s (attempt %d): %v", job.Args.Turn, job.Args.Conversation, job.Attempt, err)
		return river.JobSnooze(snoozeFor(0, w.lease))
	}
	if err != nil {
		w.log("turn %s of conversation %s (attempt %d): %v; it is tried again", job.Args.Turn, job.Args.Conversation, job.Attempt, err)
	}
	return err
}

// snoozeFor is how long a job waits for a holder whose lease ends in
// left: about then, at least a tenth of the lease and at most the lease.
func snoozeFor(left, lease time.Duration) time.Duration {
	return min(max(left, lease/10, 50*time.Millisecond), lease)
}

// retryPolicy tries a failed or rescued job again soon — a second per
// attempt, up to ten — not River's default (attempts to the fourth power,
// in seconds), which would leave a conversation whose workers died a few
// times waiting for minutes.
type retryPolicy struct{}

func (retryPolicy) NextRetry(j *rivertype.JobRow) time.Time {
	return time.Now().Add(time.Duration(min(max(j.Attempt, 1), 10)) * time.Second)
}
