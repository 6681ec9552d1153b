package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// A database of layout 6 (rate limits without a count of sends) is
// brought to this myelin's layout at Open: its row reads back as it was,
// having counted no send, and the key's next request is spent from it —
// refused while its stored retry-after runs, let through after, the
// first ticket.
func TestALayoutSixRateLimitCountsItsSendsFromNone(t *testing.T) {
	ctx := context.Background()
	_, dsn := blobSchema(t)
	conn := rawConn(t, dsn)
	makeLayout(t, conn, 6)
	next := time.Date(2026, 12, 1, 10, 0, 20, 0, time.UTC)
	updated := next.Add(-20 * time.Second)
	key := ratelimit.Key{Endpoint: "api.anthropic.com", Identity: "k:0123456789ab", Model: "claude"}
	if _, err := conn.Exec(ctx, `INSERT INTO myelin_rate_limits (endpoint, identity, model, next_allowed, remaining, why, updated_at)
		VALUES ($1, $2, $3, $4, 1, '429: retry after 20s', $5)`, key.Endpoint, key.Identity, key.Model, next, updated); err != nil {
		t.Fatal(err)
	}
	limits := openBlobStore(t, dsn).RateLimits()
	limits.callers = true // spend at the times below, not the database's now
	st, found, err := limits.Load(ctx, key)
	want := ratelimit.State{NextAllowed: next, Remaining: 1, Why: "429: retry after 20s", UpdatedAt: updated}
	if err != nil || !found || !st.NextAllowed.Equal(want.NextAllowed) || st.Remaining != 1 || st.Why != want.Why ||
		!st.UpdatedAt.Equal(updated) || st.Sent != 0 || st.Answered != 0 || !st.LastSent.IsZero() {
		t.Fatalf("the layout-6 row after the migration: %+v, found %v, %v; want %+v, no send counted", st, found, err, want)
	}
	if st, ok, err := limits.Spend(ctx, key, next.Add(-time.Second), time.Minute); err != nil || ok {
		t.Errorf("Spend while the stored retry-after runs = %v, %+v, %v; want refused", ok, st, err)
	}
	if st, ok, err := limits.Spend(ctx, key, next, time.Minute); err != nil || !ok || st.Sent != 1 || st.Remaining != 0 {
		t.Errorf("Spend once the stored retry-after passed = %v, %+v, %v; want granted, ticket 1, none left", ok, st, err)
	}
}
