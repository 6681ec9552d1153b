package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/myelin-run/myelin/ratelimit"
)

// RateLimits is the providers' rate limits kept in the store's database
// (table myelin_rate_limits, layout 6), a ratelimit.Shared: a row per
// limiter key with its next allowed time and budget, so that the
// limiters of every process on the database wait for each other's 429s
// and a retry-after outlives a restart (docs/ratelimits.md). It holds
// keys' identities, never keys, and nothing of any conversation.
type RateLimits struct{ s *Store }

var _ ratelimit.Shared = RateLimits{}

// RateLimits is the store's rate limits, shared with every process on
// its database.
func (s *Store) RateLimits() RateLimits { return RateLimits{s} }

// Load reads key's state; found is false for a key never saved.
func (r RateLimits) Load(ctx context.Context, key ratelimit.Key) (ratelimit.State, bool, error) {
	var st ratelimit.State
	err := r.s.pool.QueryRow(ctx, `SELECT next_allowed, remaining, why, updated_at FROM myelin_rate_limits
		WHERE endpoint = $1 AND identity = $2 AND model = $3`, key.Endpoint, key.Identity, key.Model).
		Scan(&st.NextAllowed, &st.Remaining, &st.Why, &st.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ratelimit.State{}, false, nil
	}
	if err != nil {
		return ratelimit.State{}, false, r.s.explain("reading the rate limit of "+key.String(), err)
	}
	return st, true, nil
}

// Save merges st into key's row in one statement, whatever the order
// concurrent saves land in: the later next-allowed time is kept, with
// its reason, and the later observation's budget; the next-allowed time
// never moves earlier.
func (r RateLimits) Save(ctx context.Context, key ratelimit.Key, st ratelimit.State) error {
	_, err := r.s.pool.Exec(ctx, `INSERT INTO myelin_rate_limits AS r
		(endpoint, identity, model, next_allowed, remaining, why, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (endpoint, identity, model) DO UPDATE SET
			next_allowed = GREATEST(r.next_allowed, EXCLUDED.next_allowed),
			why = CASE WHEN EXCLUDED.next_allowed >= r.next_allowed THEN EXCLUDED.why ELSE r.why END,
			remaining = CASE WHEN EXCLUDED.updated_at >= r.updated_at THEN EXCLUDED.remaining ELSE r.remaining END,
			updated_at = GREATEST(r.updated_at, EXCLUDED.updated_at)`,
		key.Endpoint, key.Identity, key.Model, pgTime(st.NextAllowed), st.Remaining, st.Why, pgTime(st.UpdatedAt))
	if err != nil {
		return r.s.explain("saving the rate limit of "+key.String(), err)
	}
	return nil
}

// pgTime is t as the table keeps it: cut to the microsecond (toMicro),
// so that what a Limiter compares is what is read back.
func pgTime(t time.Time) time.Time { return toMicro(t) }
