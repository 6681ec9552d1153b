package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/ratelimit"
)

// On the Postgres store too, a rate_limit_error inside process A's
// stream, after process B sent and was answered meanwhile, sets the
// shared budget to one going first (before, the row's answered was past
// A's view of the key's sends, and the refusal was dropped).
func TestPostgresARefusalInsideAStreamReachesTheOtherProcesses(t *testing.T) {
	open, _ := opener(t, nil)
	ctx := context.Background()
	key := ratelimit.Key{Endpoint: "api.anthropic.com", Identity: "k:instream", Model: "m-" + time.Now().Format("150405.000000")}
	a := &ratelimit.Limiter{Shared: open().RateLimits()}
	b := &ratelimit.Limiter{Shared: open().RateLimits()}
	ok := func(n int64) ratelimit.Observation {
		return ratelimit.Observation{At: time.Now(), From: key.Endpoint, Status: 200, Requests: ratelimit.Dimension{Remaining: n, HasRemaining: true}}
	}
	w, err := a.Wait(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ObserveAnswer(ctx, key, w.Ticket, ok(50)); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		wb, err := b.Wait(ctx, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ObserveAnswer(ctx, key, wb.Ticket, ok(49-i)); err != nil {
			t.Fatal(err)
		}
	}
	o := ratelimit.FromResponse("", 0, nil, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"m"}}`), time.Now())
	o.From = key.Endpoint
	if err := a.ObserveInStream(ctx, key, o); err != nil {
		t.Fatal(err)
	}
	st, _, err := b.Shared.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Remaining != 1 {
		t.Errorf("the shared budget after the rate limit inside A's stream is %d, want 1: B goes on at full speed", st.Remaining)
	}
}
