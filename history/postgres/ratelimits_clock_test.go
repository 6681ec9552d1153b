package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// skewedClock is a host's clock off the true time (the database's, on
// this machine) by its own amount; its waits are real.
type skewedClock time.Duration

func (c skewedClock) Now() time.Time { return time.Now().Add(time.Duration(c)) }

func (skewedClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// skewedLimiters are two limiters as two hosts would have them, each on
// its own store handle of one database, their clocks 5 s behind and 5 s
// ahead of the database's; Probe is 4 s, less than the skew between them.
func skewedLimiters(t *testing.T) (behind, ahead *ratelimit.Limiter, db RateLimits, key ratelimit.Key) {
	t.Helper()
	_, dsn := blobSchema(t)
	newLimiter := func(skew time.Duration) *ratelimit.Limiter {
		return &ratelimit.Limiter{Shared: openBlobStore(t, dsn).RateLimits(), Clock: skewedClock(skew), Probe: 4 * time.Second, Poll: 20 * time.Millisecond}
	}
	key = ratelimit.Key{Endpoint: "api.anthropic.com", Identity: "k:0123456789ab", Model: "claude"}
	return newLimiter(-5 * time.Second), newLimiter(5 * time.Second), openBlobStore(t, dsn).RateLimits(), key
}

// dbNow is the database's clock.
func dbNow(t *testing.T, r RateLimits) time.Time {
	t.Helper()
	var now time.Time
	if err := r.s.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// notWithin is whether l's Wait for key is still held after d (a request
// the store should refuse for far longer than d), ending it then.
func notWithin(t *testing.T, l *ratelimit.Limiter, key ratelimit.Key, d time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w, err := l.Wait(ctx, key, nil)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	if err == nil {
		t.Logf("Wait let the request go: %+v", w)
	}
	return err != nil
}

// A host whose clock is ahead of another's by more than Probe does not
// take the other's request as long gone: the store decides by the
// database's clock, so the first request of a key, which another host
// let through a moment ago, holds its requests until its answer.
func TestRateLimitsSpendByTheDatabasesClock(t *testing.T) {
	behind, ahead, _, key := skewedLimiters(t)
	if w, err := behind.Wait(context.Background(), key, nil); err != nil || w.Ticket.N != 1 || w.Shared != nil {
		t.Fatalf("the first request of the key, from the host behind: %+v, %v; want it let through by the store, ticket 1", w, err)
	}
	if !notWithin(t, ahead, key, 500*time.Millisecond) {
		t.Errorf("the host 10 s ahead was let through while the key's first request, sent by the host behind a moment before, had no answer (Probe 4 s)")
	}
}

// A retry-after is kept as a wait from the database's now, whatever the
// clock of the host that read it: a host ahead does not send into it
// early, and a host far ahead does not hold every other for its skew.
func TestRateLimitsKeepARetryAfterOnTheDatabasesClock(t *testing.T) {
	behind, ahead, db, key := skewedLimiters(t)
	ctx := context.Background()
	w, err := behind.Wait(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := dbNow(t, db)
	o := ratelimit.Observation{At: behind.Clock.Now(), From: key.Endpoint, Status: 429, Limited: true, RetryAfter: 8 * time.Second}
	if err := behind.ObserveAnswer(ctx, key, w.Ticket, o); err != nil {
		t.Fatalf("ObserveAnswer: %v", err)
	}
	after := dbNow(t, db)
	st, _, err := db.Load(ctx, key)
	if err != nil || st.NextAllowed.Before(before.Add(8*time.Second).Truncate(time.Microsecond)) || st.NextAllowed.After(after.Add(8*time.Second)) {
		t.Errorf("the 429's retry-after of 8 s read by the host 5 s behind was stored as %v (%v); want 8 s from the database's now, between %v and %v", st.NextAllowed, err, before.Add(8*time.Second), after.Add(8*time.Second))
	}
	if !notWithin(t, ahead, key, 500*time.Millisecond) {
		t.Errorf("the host 5 s ahead sent while the 429's retry-after of 8 s, read by the host 5 s behind, ran")
	}

	far := &ratelimit.Limiter{Shared: db, Clock: skewedClock(time.Hour)}
	o = ratelimit.Observation{At: far.Clock.Now(), From: key.Endpoint, Status: 200, Requests: ratelimit.Dimension{Remaining: 0, HasRemaining: true, Reset: far.Clock.Now().Add(30 * time.Second)}}
	before = dbNow(t, db)
	if err := far.Observe(ctx, key, o); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	after = dbNow(t, db)
	st, _, err = db.Load(ctx, key)
	if err != nil || st.NextAllowed.Before(before.Add(30*time.Second).Truncate(time.Microsecond)) || st.NextAllowed.After(after.Add(30*time.Second)) {
		t.Errorf("a reset 30 s off read by a host an hour ahead was stored as %v (%v); want 30 s from the database's now, between %v and %v", st.NextAllowed, err, before.Add(30*time.Second), after.Add(30*time.Second))
	}
	if st.UpdatedAt.Before(before.Truncate(time.Microsecond)) || st.UpdatedAt.After(after) {
		t.Errorf("the row's updated_at is %v; want the database's now, between %v and %v", st.UpdatedAt, before, after)
	}
}
