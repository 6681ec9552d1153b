package postgres_test

import (
	"testing"

	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

// The table keeps the shared contract, its arithmetic checked on the
// callers' times (the database's clock cannot be moved; the tests of
// ratelimits_clock_test.go run on it).
func TestPostgresRateLimitsKeepTheSharedContract(t *testing.T) {
	open, _ := opener(t, nil)
	ratelimittest.RunShared(t, func(*testing.T) ratelimit.Shared { return postgres.OnCallersClock(open().RateLimits()) })
}
