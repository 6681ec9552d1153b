package awssts

import (
	"testing"
	"time"
)

// TestTheDefaultBackoffIsTheSDKsStandardOne pins the SDK's standard
// backoff: a random wait under 2^attempt seconds, 20 s from attempt 5.
func TestTheDefaultBackoffIsTheSDKsStandardOne(t *testing.T) {
	var c Client
	for attempt := 1; attempt <= 4; attempt++ {
		limit := time.Duration(1<<attempt) * time.Second
		var longest time.Duration
		for range 200 {
			d := c.backoff(attempt)
			if d < 0 || d >= limit {
				t.Fatalf("attempt %d: waits %v, not in [0, %v)", attempt, d, limit)
			}
			longest = max(longest, d)
		}
		if longest < limit/4 {
			t.Errorf("attempt %d: 200 waits all under %v: not spread up to %v", attempt, limit/4, limit)
		}
	}
	for _, attempt := range []int{5, 6, 30} {
		if d := c.backoff(attempt); d != 20*time.Second {
			t.Errorf("attempt %d: waits %v, want 20s", attempt, d)
		}
	}
	c.Backoff = func(int) time.Duration { return 7 }
	if d := c.backoff(1); d != 7 {
		t.Errorf("with Backoff set: waits %v, want its 7ns", d)
	}
}
