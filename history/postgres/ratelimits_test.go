package postgres_test

import (
	"testing"

	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

func TestPostgresRateLimitsKeepTheSharedContract(t *testing.T) {
	open, _ := opener(t, nil)
	ratelimittest.RunShared(t, func(*testing.T) ratelimit.Shared { return open().RateLimits() })
}
