package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myelin-run/myelin/server"
)

// channel is the NOTIFY channel of new events; a notification carries
// only "conversation:seq", never an event's data.
const channel = "myelin_events"

// DefaultFlush is how long a text delta may wait to be written with the
// ones after it (Events.Flush): a turn streams many small deltas, and one
// insert for each would cost a transaction each.
const DefaultFlush = 40 * time.Millisecond

// pageSize bounds the events one read returns.
const pageSize = 1000

// Events is a server.EventLog kept in Postgres, shared by every process
// on the database: the worker running a turn appends its events as rows
// (conversation, seq, type, data), and every process LISTENs, so that a
// watcher of any of them is woken and reads the rows after its
// Last-Event-ID. Sequence numbers are per conversation and survive
// restarts. Text deltas (the Lazy types) are batched: written with the
// next event that is not one, or after Flush. Only the last Keep events
// of a conversation are kept.
//
// It must not carry event data in notifications (payloads are bounded),
// nor let a watcher hold an append.
type Events struct {
	pool  *pgxpool.Pool
	keep  int
	flush time.Duration
	lazy  map[string]bool
	log   func(format string, args ...any)

	mu      sync.Mutex
	pending map[string]*pending      // per conversation: events not yet written
	waiters map[string]chan struct{} // per conversation: closed at its next notification
	stop    context.CancelFunc
	done    chan struct{}
}

// pending is a conversation's events waiting to be written, and the lock
// that keeps its writes in order. It is kept while the process runs (a
// few words per conversation), so that the lock stays the one.
type pending struct {
	write  sync.Mutex // held from taking a batch to its commit
	events []server.Event
	timer  *time.Timer
}

// EventsOptions tune Events; the zero value is the default.
type EventsOptions struct {
	// Keep is how many events of a conversation are kept; 0 means
	// server.DefaultEventsKept.
	Keep int
	// Flush is how long a Lazy event may wait; 0 means DefaultFlush.
	Flush time.Duration
	// Lazy are the event types that may wait to be written with the next
	// (the server's text deltas, server.EventModelDelta, by default).
	Lazy []string
	// Log gets the failures no caller sees (a batch written late).
	Log func(format string, args ...any)
}

// NewEvents starts the event log on pool, whose tables Migrate made: it
// LISTENs on its own connection until Close.
func NewEvents(pool *pgxpool.Pool, opts EventsOptions) *Events {
	e := &Events{pool: pool, keep: opts.Keep, flush: opts.Flush, lazy: map[string]bool{}, log: opts.Log,
		pending: map[string]*pending{}, waiters: map[string]chan struct{}{}, done: make(chan struct{})}
	if e.keep <= 0 {
		e.keep = server.DefaultEventsKept
	}
	if e.flush <= 0 {
		e.flush = DefaultFlush
	}
	if opts.Lazy == nil {
		opts.Lazy = []string{server.EventModelDelta}
	}
	for _, t := range opts.Lazy {
		e.lazy[t] = true
	}
	if e.log == nil {
		e.log = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go e.listen(ctx)
	return e
}

// Close writes the events still waiting and stops listening.
func (e *Events) Close() error {
	e.mu.Lock()
	convs := make([]string, 0, len(e.pending))
	for c := range e.pending {
		convs = append(convs, c)
	}
	e.mu.Unlock()
	var errs []error
	for _, c := range convs {
		errs = append(errs, e.write(context.Background(), c))
	}
	e.stop()
	<-e.done
	return errors.Join(errs...)
}

// Append adds an event to conversation conv's; a Lazy one is written
// within Flush, any other at once with those waiting before it.
func (e *Events) Append(ctx context.Context, conv, typ string, data json.RawMessage) error {
	e.mu.Lock()
	p := e.pending[conv]
	if p == nil {
		p = &pending{}
		e.pending[conv] = p
	}
	p.events = append(p.events, server.Event{Type: typ, Data: data})
	if e.lazy[typ] {
		if p.timer == nil {
			p.timer = time.AfterFunc(e.flush, func() {
				if err := e.write(context.Background(), conv); err != nil {
					e.log("events of conversation %s: %v", conv, err)
				}
			})
		}
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	return e.write(ctx, conv)
}

// write writes conversation conv's waiting events in one transaction,
// numbering them after its last, and notifies every listener.
func (e *Events) write(ctx context.Context, conv string) error {
	e.mu.Lock()
	p := e.pending[conv]
	e.mu.Unlock()
	if p == nil {
		return nil
	}
	p.write.Lock()
	defer p.write.Unlock()
	e.mu.Lock()
	batch := p.events
	p.events = nil
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	e.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	types := make([]string, len(batch))
	datas := make([][]byte, len(batch))
	for i, ev := range batch {
		types[i], datas[i] = ev.Type, ev.Data
	}
	err := pgx.BeginFunc(context.WithoutCancel(ctx), e.pool, func(tx pgx.Tx) error {
		var last int64
		err := tx.QueryRow(ctx, `INSERT INTO myelin_event_seqs (conversation, last) VALUES ($1, $2)
			ON CONFLICT (conversation) DO UPDATE SET last = myelin_event_seqs.last + EXCLUDED.last RETURNING last`, conv, len(batch)).Scan(&last)
		if err != nil {
			return err
		}
		first := last - int64(len(batch)) + 1
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO myelin_events (conversation, seq, type, data)
			SELECT $1, $2 + x.i - 1, x.t, x.d FROM unnest($3::text[], $4::bytea[]) WITH ORDINALITY AS x(t, d, i)`, conv, first, types, datas)
		if step := int64(max(e.keep/4, 1)); (first-1)/step != last/step && last > int64(e.keep) {
			// now and then, not at every write: the rows past Keep go
			b.Queue(`DELETE FROM myelin_events WHERE conversation = $1 AND seq <= $2`, conv, last-int64(e.keep))
		}
		b.Queue(`SELECT pg_notify($1, $2)`, channel, conv+":"+strconv.FormatInt(last, 10))
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("writing %d event(s) of conversation %s: %w", len(batch), conv, err)
	}
	return nil
}

// Since reads conversation conv's events after seq; More is closed at the
// next notification of conv (or at once when the page was full).
func (e *Events) Since(ctx context.Context, conv string, seq int64) (server.EventPage, error) {
	page := server.EventPage{Kept: e.keep, More: e.waiter(conv)} // before reading: no notification missed
	last, err := e.Last(ctx, conv)
	if err != nil {
		return page, err
	}
	from := seq
	if seq > last {
		page.Restarted, from = true, 0
	}
	rows, err := e.pool.Query(ctx, `SELECT seq, type, data FROM myelin_events WHERE conversation = $1 AND seq > $2 ORDER BY seq LIMIT $3`, conv, from, pageSize)
	if err != nil {
		return page, fmt.Errorf("reading the events of conversation %s after %d: %w", conv, seq, err)
	}
	page.Events, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Event, error) {
		var ev server.Event
		var data []byte
		err := r.Scan(&ev.Seq, &ev.Type, &data)
		ev.Data = data
		return ev, err
	})
	if err != nil {
		return page, fmt.Errorf("reading the events of conversation %s after %d: %w", conv, seq, err)
	}
	switch {
	case len(page.Events) > 0:
		page.Gone = page.Events[0].Seq - from - 1
	case last > from:
		page.Gone = last - from
	}
	if len(page.Events) == pageSize {
		closed := make(chan struct{})
		close(closed)
		page.More = closed
	}
	return page, nil
}

// Last is the sequence number of conversation conv's newest event written.
func (e *Events) Last(ctx context.Context, conv string) (int64, error) {
	var last int64
	err := e.pool.QueryRow(ctx, `SELECT last FROM myelin_event_seqs WHERE conversation = $1`, conv).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the last event of conversation %s: %w", conv, err)
	}
	return last, nil
}

// waiter is the channel closed at conversation conv's next notification.
func (e *Events) waiter(conv string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.waiters[conv]
	if ch == nil {
		ch = make(chan struct{})
		e.waiters[conv] = ch
	}
	return ch
}

// wake closes conversation conv's waiter, or every one when conv is "".
func (e *Events) wake(conv string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for c, ch := range e.waiters {
		if conv == "" || c == conv {
			close(ch)
			delete(e.waiters, c)
		}
	}
}

// listen LISTENs on a connection of its own until ctx ends, waking the
// watchers of each conversation notified; when the connection breaks it
// connects again and wakes every watcher (what came meanwhile was not
// notified to this process).
func (e *Events) listen(ctx context.Context) {
	defer close(e.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := e.listenOnce(ctx, func() { backoff = 50 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		e.log("listening for events: %v; connecting again", err)
		e.wake("")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (e *Events) listenOnce(ctx context.Context, connected func()) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Conn().Close(context.Background()) // not back into the pool still listening
		return err
	}
	connected()
	e.wake("") // anything written while this process did not listen
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			conn.Conn().Close(context.Background())
			return err
		}
		if i := strings.LastIndexByte(n.Payload, ':'); i > 0 {
			e.wake(n.Payload[:i])
		}
	}
}
