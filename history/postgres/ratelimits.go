package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/ratelimit"
)

// RateLimits is the providers' rate limits kept in the store's database
// (table myelin_rate_limits, layouts 6 and 7), a ratelimit.Shared: a row
// per limiter key with its next allowed time, its budget and its count
// of requests let through, so that the limiters of every process on the
// database spend one budget between them, wait for each other's 429s,
// and a retry-after outlives a restart (docs/ratelimits.md). Each of its
// methods is one statement. It holds keys' identities, never keys, and
// nothing of any conversation.
type RateLimits struct {
	s *Store
	// callers times the statements by the caller's times instead of the
	// database's clock: for the tests of the table's arithmetic only
	// (OnCallersClock, export_test.go).
	callers bool
}

var _ ratelimit.Shared = RateLimits{}

// RateLimits is the store's rate limits, shared with every process on
// its database.
func (s *Store) RateLimits() RateLimits { return RateLimits{s: s} }

// stateColumns are the columns a ratelimit.State is read from, in the
// order scanState takes them.
const stateColumns = `next_allowed, remaining, why, updated_at, sent, answered, answers, last_sent`

// scanState reads a State from a row of stateColumns (after any columns
// dest holds already).
func scanState(row pgx.Row, st *ratelimit.State, dest ...any) error {
	return row.Scan(append(dest, &st.NextAllowed, &st.Remaining, &st.Why, &st.UpdatedAt, &st.Sent, &st.Answered, &st.Answers, &st.LastSent)...)
}

// Load reads key's state; found is false for a key never saved.
func (r RateLimits) Load(ctx context.Context, key ratelimit.Key) (ratelimit.State, bool, error) {
	var st ratelimit.State
	err := scanState(r.s.pool.QueryRow(ctx, `SELECT `+stateColumns+` FROM myelin_rate_limits
		WHERE endpoint = $1 AND identity = $2 AND model = $3`, key.Endpoint, key.Identity, key.Model), &st)
	if errors.Is(err, pgx.ErrNoRows) {
		return ratelimit.State{}, false, nil
	}
	if err != nil {
		return ratelimit.State{}, false, r.s.explain("reading the rate limit of "+key.String(), err)
	}
	return st, true, nil
}

// The database's clock. Hosts' clocks differ, and every time in the
// table is compared with times other hosts wrote, so the table's times
// are the database's, as the leases' are (docs/scale.md): a Spend is
// decided at the database's now, and an answer's times are stored as the
// same distances from the database's now as they were from the answer's
// At on the host that read it. clockCTE is that now, taken once per
// statement (clock_timestamp(), not the transaction's now(), so that a
// statement that waited for a row's lock decides at when it got it); $n
// is NULL but in the tests of the table's arithmetic (OnCallersClock),
// which time it by the caller's own times.
func clockCTE(n string) string {
	return `c AS MATERIALIZED (SELECT COALESCE(` + n + `::timestamptz, clock_timestamp()) AS now)`
}

// micros is SQL for a duration of $n microseconds (bigint), added to a
// time as microseconds, never as days (whose length a time zone bends).
func micros(n string) string { return `(` + n + `::bigint * interval '1 microsecond')` }

// spendSQL lets one request go when the row allows it (State.Spend) at
// the database's now, in one statement: the upsert takes the row's lock
// and decides on its latest version, so two processes never both take
// the last of a budget; a key without a row gets one (State{}.Spend), its
// first request let through. When the row does not allow it, the row is
// read as the statement's snapshot saw it, to wait by. $4 is the clock
// (clockCTE), $5 the zero time, $6 the probe in microseconds; every row
// comes with the now it was decided at.
var spendSQL = `WITH ` + clockCTE("$4") + `, spent AS (
	INSERT INTO myelin_rate_limits AS r (endpoint, identity, model, ` + stateColumns + `)
	SELECT $1, $2, $3, $5::timestamptz, 0, '', $5::timestamptz, 1, 0, 0, c.now FROM c
	ON CONFLICT (endpoint, identity, model) DO UPDATE SET
		remaining = CASE WHEN r.remaining > 0 THEN r.remaining - 1 ELSE r.remaining END,
		sent = r.sent + 1,
		-- none went within a probe: those unanswered are taken as lost
		answers = CASE WHEN r.last_sent <= EXCLUDED.last_sent - ` + micros("$6") + ` THEN r.sent ELSE r.answers END,
		last_sent = EXCLUDED.last_sent
	WHERE r.next_allowed <= EXCLUDED.last_sent AND (r.remaining <> 0 OR r.last_sent <= EXCLUDED.last_sent - ` + micros("$6") + `)
	RETURNING ` + stateColumns + `
)
SELECT true, (SELECT now FROM c), * FROM spent
UNION ALL
SELECT false, (SELECT now FROM c), ` + stateColumns + ` FROM myelin_rate_limits
WHERE endpoint = $1 AND identity = $2 AND model = $3 AND NOT EXISTS (SELECT 1 FROM spent)`

// spendTries bounds the statements of one Spend: a refusal read from a
// snapshot taken before another process's spend or answer landed (which
// the upsert waited for) may show a state that allows; the next
// statement's snapshot holds it.
const spendTries = 3

// Spend lets one request of key go when its row allows it
// (ratelimit.State.Spend, with probe) at the database's now — not at
// now, the caller's clock, which another host's differs from — keeping
// the row after: one statement, atomic whatever other processes do at
// once. It returns the state after and true, or, refused, the state as
// read and false; its times are the database's.
func (r RateLimits) Spend(ctx context.Context, key ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool, error) {
	var st ratelimit.State
	var granted bool
	for range spendTries {
		st, granted = ratelimit.State{}, false
		var at time.Time
		err := scanState(r.s.pool.QueryRow(ctx, spendSQL, key.Endpoint, key.Identity, key.Model,
			r.clock(now), time.Time{}, probe.Microseconds()), &st, &granted, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the row was made by another process after this statement's snapshot
		}
		if err != nil {
			return ratelimit.State{}, false, r.s.explain("spending the rate limit of "+key.String(), err)
		}
		if _, allows := st.Spend(at, probe); granted || !allows {
			return st, granted, nil
		}
	}
	return st, false, nil
}

// saveSQL applies an answer to key's row (State.Apply) in one statement
// at the database's now (clockCTE, $5): the upsert takes the row's lock,
// so the budget counts the sends the row holds at that moment, whatever
// lands at once. $4 is the answer's ticket (N), $18 the requests
// unanswered when its request went, $21 whether the ticket is a local
// one (it neither sets the budget nor counts as an answer), $22 whether
// the answer is said again (ratelimit.Answer.Again: not counted as an
// answer a second time), $23 whether its request never reached the
// provider (ratelimit.Answer.Unreached: counted only when its request is
// the newest the row counts as sent or numbered above its answers), $6 its
// next-allowed time in microseconds after its At (NULL: none), $7 its
// why, $8 its budget as of its request, $20 whether it keeps the budget
// (then one goes first if it leaves none and none is in flight),
// $19 whether one goes first after it, $9 its reset in microseconds
// after its At (NULL: none), $10 the why of a wait for it; $11 to $17
// are the row of a key without one, State{}.Apply(answer) ($11 its
// next-allowed time after At, NULL: none; $14 the zero time). In c, next
// and reset are the answer's times on the database's clock.
var saveSQL = `WITH ` + clockCTE("$5") + `, a AS MATERIALIZED (
	SELECT c.now + ` + micros("$6") + ` AS next, c.now + ` + micros("$9") + ` AS reset FROM c
)
INSERT INTO myelin_rate_limits AS r (endpoint, identity, model, ` + stateColumns + `)
SELECT $1, $2, $3, COALESCE(c.now + ` + micros("$11") + `, $14::timestamptz), $12, $13, c.now, $15, $16, $17, $14::timestamptz FROM c
ON CONFLICT (endpoint, identity, model) DO UPDATE SET
	(next_allowed, why, remaining, answered, answers, updated_at) = (
		SELECT v.next_allowed, v.why,
			-- while a wait runs, one goes first when it is over
			CASE WHEN v.next_allowed > (SELECT now FROM c) AND (v.remaining < 0 OR v.remaining > 1) THEN 1 ELSE v.remaining END,
			v.answered, r.answers + CASE WHEN $21::boolean OR $22::boolean OR ($23::boolean AND r.sent <> $4::bigint AND r.answers >= $4::bigint) THEN 0 ELSE 1 END, GREATEST(r.updated_at, (SELECT now FROM c))
		FROM (
			SELECT
				CASE WHEN b.moves THEN (SELECT reset FROM a) ELSE t.next_allowed END AS next_allowed,
				CASE WHEN b.moves THEN $10::text ELSE t.why END AS why,
				CASE WHEN NOT b.applied THEN
						-- an answer keeping a spent budget, none in flight
						-- after it: one goes first
						CASE WHEN $20::boolean AND NOT $21::boolean AND NOT $22::boolean AND NOT ($23::boolean AND r.sent <> $4::bigint AND r.answers >= $4::bigint) AND r.remaining = 0 AND r.sent <= r.answers + 1 THEN 1 ELSE r.remaining END
					WHEN b.budget = 0 AND (SELECT reset FROM a) IS NOT NULL THEN 1
					ELSE b.budget END AS remaining,
				CASE WHEN b.applied THEN k.n ELSE r.answered END AS answered
			FROM (
				-- an answer said again (inside a stream) answers the
				-- latest request the row counts as sent, with those
				-- unanswered before it, when its ticket is older
				-- (State.Apply, State.Ticket)
				SELECT CASE WHEN $22::boolean AND NOT $21::boolean AND r.sent > $4::bigint THEN r.sent ELSE $4::bigint END AS n,
					CASE WHEN $22::boolean AND NOT $21::boolean AND r.sent > $4::bigint THEN GREATEST(0, r.sent - 1 - r.answers) ELSE $18::bigint END AS unanswered
			) k, (
				-- the time never moves earlier; with no wait running the
				-- reason is the latest answer's
				SELECT CASE WHEN (SELECT next FROM a) > r.next_allowed THEN (SELECT next FROM a) ELSE r.next_allowed END AS next_allowed,
					CASE WHEN (SELECT next FROM a) > r.next_allowed OR r.next_allowed <= (SELECT now FROM c) THEN $7::text ELSE r.why END AS why
			) t, LATERAL (
				-- an answer no older than the last applied sets the budget
				-- (unless it keeps it, or its ticket is a local one): its
				-- own less the requests its provider may not have counted:
				-- those sent after its request, and those before it
				-- unanswered when it went
				SELECT k.n >= r.answered AND NOT $20::boolean AND NOT $21::boolean AS applied,
					CASE WHEN $19::boolean THEN 1 WHEN $8::bigint < 0 THEN -1 ELSE GREATEST(0, $8::bigint - GREATEST(0, r.sent - k.n) - k.unanswered) END AS budget
			) b0, LATERAL (
				-- a budget so spent waits for the answer's reset
				SELECT b0.applied, b0.budget,
					COALESCE(b0.applied AND b0.budget = 0 AND (SELECT reset FROM a) > t.next_allowed AND (SELECT reset FROM a) > (SELECT now FROM c), false) AS moves
			) b
		) v
	)
RETURNING ` + stateColumns

// Save applies the answer a to key's row (ratelimit.State.Apply) in one
// statement at the database's now and returns the state after: the
// next-allowed time never moves earlier, and the budget is a's less the
// requests the row counts as sent after a's and those unanswered when
// a's went, unless a newer answer set it already. a's times are stored
// as the same distances from the database's now as they were from a.At
// (a 20 s retry-after is 20 s from the database's now, whatever the
// clock of the host that read it), and the row's updated_at is the
// database's now.
func (r RateLimits) Save(ctx context.Context, key ratelimit.Key, a ratelimit.Answer) (ratelimit.State, error) {
	a.At, a.NextAllowed, a.Reset = pgTime(a.At), pgTime(a.NextAllowed), pgTime(a.Reset)
	born := ratelimit.State{}.Apply(a)
	var st ratelimit.State
	err := scanState(r.s.pool.QueryRow(ctx, saveSQL, key.Endpoint, key.Identity, key.Model,
		a.Ticket.N, r.clock(a.At), after(a.At, a.NextAllowed), a.Why, a.Remaining, after(a.At, a.Reset), a.ResetWhy,
		after(a.At, born.NextAllowed), born.Remaining, born.Why, time.Time{}, born.Sent, born.Answered, born.Answers,
		a.Ticket.Unanswered, a.First, a.KeepsBudget, a.Ticket.Local, a.Again, a.Unreached), &st)
	if err != nil {
		return ratelimit.State{}, r.s.explain("saving the rate limit of "+key.String(), err)
	}
	return st, nil
}

// clock is the argument a statement takes as its now (clockCTE): nil,
// the database's clock, but in the tests of the table's arithmetic
// (OnCallersClock), where it is the caller's t.
func (r RateLimits) clock(t time.Time) any {
	if !r.callers {
		return nil
	}
	return t
}

// after is t as microseconds after at, for a statement to add to its own
// now (micros); nil (SQL NULL) for the zero time (none said).
func after(at, t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Sub(at).Microseconds()
}

// pgTime is t as the table keeps it: cut to the microsecond (toMicro),
// so that what a Limiter compares is what is read back.
func pgTime(t time.Time) time.Time { return toMicro(t) }
