package main

import (
	"fmt"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/ratelimit"
)

// This file is what run, chat and serve share of the providers' rate
// limits and retries (issue 32, docs/ratelimits.md): one limiter per
// process, shared through a Postgres store with every process on it, and
// --retry-for, the time a request that failed before anything of its
// answer was shown is sent again for.

// defaultRetryFor is --retry-for unless the command line says.
const defaultRetryFor = 2 * time.Minute

// retryForHelp is the help of --retry-for.
const retryForHelp = "how long (a `DURATION`, counted from its first attempt) a request that failed before anything of its answer was shown — overloaded, a server's fault, a rate limit, a connection lost, a stream cut before its first output — is sent again for, with jittered exponential backoff; 0 for the wires' few retries instead (docs/ratelimits.md)"

// retryFor is --retry-for's value: a duration of 0 or more.
type retryFor time.Duration

func (r *retryFor) String() string { return time.Duration(*r).String() }

// Set reads a duration, refusing one that does not parse or is negative,
// saying what to give.
func (r *retryFor) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: give one with its unit, such as 2m, 10m or 90s, or 0 for the wires' few retries", s)
	}
	if d < 0 {
		return fmt.Errorf("%s is negative: give how long a failed request is sent again for, such as 2m, or 0 for the wires' few retries", s)
	}
	*r = retryFor(d)
	return nil
}

// wireLimits is what newProvider gives every wire of the process: the rate
// limiter every request waits at, and how long a request is retried for.
type wireLimits struct {
	limiter  *ratelimit.Limiter
	retryFor time.Duration
}

// newLimits is the process's limits: a new limiter (the only one of the
// process: run, chat and serve open one agent), and the retries' bound;
// 0 while a test sets retries, which bounds them by count as before.
func newLimits(f retryFor) wireLimits {
	d := time.Duration(f)
	if retries != 0 {
		d = 0
	}
	return wireLimits{limiter: &ratelimit.Limiter{}, retryFor: d}
}

// share has the limiter keep its keys' states in store when store is
// the Postgres store (postgres.Store.RateLimits): every process on it
// then waits for a retry-after any of them was told, and a retry-after
// outlives a restart. Called once the store is open, before any request.
func (l wireLimits) share(store history.Store) {
	if pg, ok := store.(*postgres.Store); ok {
		l.limiter.Shared = pg.RateLimits()
	}
}
