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
type RateLimits struct{ s *Store }

var _ ratelimit.Shared = RateLimits{}

// RateLimits is the store's rate limits, shared with every process on
// its database.
func (s *Store) RateLimits() RateLimits { return RateLimits{s} }

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

// spendSQL lets one request go when the row allows it (State.Spend), in
// one statement: the upsert takes the row's lock and decides on its
// latest version, so two processes never both take the last of a budget;
// a key without a row gets one, its first request let through. When the
// row does not allow it, the row is read as the statement's snapshot saw
// it, to wait by.
const spendSQL = `WITH spent AS (
	INSERT INTO myelin_rate_limits AS r (endpoint, identity, model, ` + stateColumns + `)
	VALUES ($1, $2, $3, $5, $6, '', $7, $8, 0, 0, $4)
	ON CONFLICT (endpoint, identity, model) DO UPDATE SET
		remaining = CASE WHEN r.remaining > 0 THEN r.remaining - 1 ELSE r.remaining END,
		sent = r.sent + 1,
		-- none went within a probe: those unanswered are taken as lost
		answers = CASE WHEN r.last_sent <= $9::timestamptz THEN r.sent ELSE r.answers END,
		last_sent = EXCLUDED.last_sent
	WHERE r.next_allowed <= EXCLUDED.last_sent AND (r.remaining <> 0 OR r.last_sent <= $9::timestamptz)
	RETURNING ` + stateColumns + `
)
SELECT true, * FROM spent
UNION ALL
SELECT false, ` + stateColumns + ` FROM myelin_rate_limits
WHERE endpoint = $1 AND identity = $2 AND model = $3 AND NOT EXISTS (SELECT 1 FROM spent)`

// spendTries bounds the statements of one Spend: a refusal read from a
// snapshot taken before another process's spend or answer landed (which
// the upsert waited for) may show a state that allows; the next
// statement's snapshot holds it.
const spendTries = 3

// Spend lets one request of key go at now when its row allows it
// (ratelimit.State.Spend, with probe), keeping the row after: one
// statement, atomic whatever other processes do at once. It returns the
// state after and true, or, refused, the state as read and false.
func (r RateLimits) Spend(ctx context.Context, key ratelimit.Key, now time.Time, probe time.Duration) (ratelimit.State, bool, error) {
	now = pgTime(now)
	first, _ := ratelimit.State{}.Spend(now, probe)
	var st ratelimit.State
	var granted bool
	for range spendTries {
		st, granted = ratelimit.State{}, false
		err := scanState(r.s.pool.QueryRow(ctx, spendSQL, key.Endpoint, key.Identity, key.Model,
			now, pgTime(first.NextAllowed), first.Remaining, pgTime(first.UpdatedAt), first.Sent, now.Add(-probe)), &st, &granted)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the row was made by another process after this statement's snapshot
		}
		if err != nil {
			return ratelimit.State{}, false, r.s.explain("spending the rate limit of "+key.String(), err)
		}
		if _, allows := st.Spend(now, probe); granted || !allows {
			return st, granted, nil
		}
	}
	return st, false, nil
}

// saveSQL applies an answer to key's row (State.Apply) in one statement:
// the upsert takes the row's lock, so the budget counts the sends the row
// holds at that moment, whatever lands at once. $4 is the answer's
// ticket (N), $18 the requests unanswered when its request went, $5 when
// it was read, $6 its next-allowed time (NULL: none), $7 its why, $8 its
// budget as of its request, $20 whether one goes first after it, $9 its
// reset (NULL: none), $10 the why of a wait for it; $11 to $17 and $19
// are the row of a key without one, State{}.Apply(answer).
const saveSQL = `INSERT INTO myelin_rate_limits AS r (endpoint, identity, model, ` + stateColumns + `)
VALUES ($1, $2, $3, $11, $12, $13, $14, $15, $16, $19, $17)
ON CONFLICT (endpoint, identity, model) DO UPDATE SET
	(next_allowed, why, remaining, answered, answers, updated_at) = (
		SELECT v.next_allowed, v.why,
			-- while a wait runs, one goes first when it is over
			CASE WHEN v.next_allowed > $5::timestamptz AND (v.remaining < 0 OR v.remaining > 1) THEN 1 ELSE v.remaining END,
			v.answered, r.answers + 1, GREATEST(r.updated_at, $5::timestamptz)
		FROM (
			SELECT
				CASE WHEN b.moves THEN $9::timestamptz ELSE t.next_allowed END AS next_allowed,
				CASE WHEN b.moves THEN $10::text ELSE t.why END AS why,
				CASE WHEN NOT b.applied THEN r.remaining
					WHEN b.budget = 0 AND $9::timestamptz IS NOT NULL THEN 1
					ELSE b.budget END AS remaining,
				CASE WHEN b.applied THEN $4::bigint ELSE r.answered END AS answered
			FROM (
				-- the time never moves earlier; with no wait running the
				-- reason is the latest answer's
				SELECT CASE WHEN $6::timestamptz > r.next_allowed THEN $6::timestamptz ELSE r.next_allowed END AS next_allowed,
					CASE WHEN $6::timestamptz > r.next_allowed OR r.next_allowed <= $5::timestamptz THEN $7::text ELSE r.why END AS why
			) t, LATERAL (
				-- an answer no older than the last applied sets the budget:
				-- its own less the requests its provider may not have
				-- counted: those sent after its request, and those before
				-- it unanswered when it went
				SELECT $4::bigint >= r.answered AS applied,
					CASE WHEN $20::boolean THEN 1 WHEN $8::bigint < 0 THEN -1 ELSE GREATEST(0, $8::bigint - GREATEST(0, r.sent - $4::bigint) - $18::bigint) END AS budget
			) b0, LATERAL (
				-- a budget so spent waits for the answer's reset
				SELECT b0.applied, b0.budget,
					COALESCE(b0.applied AND b0.budget = 0 AND $9::timestamptz > t.next_allowed AND $9::timestamptz > $5::timestamptz, false) AS moves
			) b
		) v
	)
RETURNING ` + stateColumns

// Save applies the answer a to key's row (ratelimit.State.Apply) in one
// statement and returns the state after: the next-allowed time never
// moves earlier, and the budget is a's less the requests the row counts
// as sent after a's and those unanswered when a's went, unless a newer
// answer set it already.
func (r RateLimits) Save(ctx context.Context, key ratelimit.Key, a ratelimit.Answer) (ratelimit.State, error) {
	a.At, a.NextAllowed, a.Reset = pgTime(a.At), pgTime(a.NextAllowed), pgTime(a.Reset)
	born := ratelimit.State{}.Apply(a)
	var st ratelimit.State
	err := scanState(r.s.pool.QueryRow(ctx, saveSQL, key.Endpoint, key.Identity, key.Model,
		a.Ticket.N, a.At, orNull(a.NextAllowed), a.Why, a.Remaining, orNull(a.Reset), a.ResetWhy,
		born.NextAllowed, born.Remaining, born.Why, born.UpdatedAt, born.Sent, born.Answered, born.LastSent, a.Ticket.Unanswered, born.Answers, a.First), &st)
	if err != nil {
		return ratelimit.State{}, r.s.explain("saving the rate limit of "+key.String(), err)
	}
	return st, nil
}

// pgTime is t as the table keeps it: cut to the microsecond (toMicro),
// so that what a Limiter compares is what is read back.
func pgTime(t time.Time) time.Time { return toMicro(t) }

// orNull is t, or SQL NULL for the zero time (none said).
func orNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
