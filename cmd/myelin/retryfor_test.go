package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
	"github.com/myelin-run/myelin/ratelimit/ratelimittest"
)

// --retry-for takes a duration of 0 or more, on run, chat and serve; one
// that does not parse (a number without its unit too) or is negative is a
// usage error saying what to give, and nothing is sent.
func TestRetryForRefusesANegativeOrUnreadableDuration(t *testing.T) {
	srv := fakeAnthropic(t)
	dir := workspaceWith(t, nil)
	for _, cmd := range []string{"run", "chat", "serve"} {
		for _, c := range []struct{ value, want string }{
			{"-1s", `invalid value "-1s" for flag -retry-for: -1s is negative: give how long a failed request is sent again for, such as 2m, or 0`},
			{"10", `invalid value "10" for flag -retry-for: "10" is not a duration: give one with its unit, such as 2m, 10m or 90s, or 0`},
			{"soon", `invalid value "soon" for flag -retry-for: "soon" is not a duration`},
		} {
			args := []string{cmd, "--workspace", dir, "--retry-for", c.value}
			if cmd == "run" {
				args = append(args, "hi")
			}
			_, errOut, code := cli(t, args...)
			if code != exitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, errOut, exitUsage, c.want)
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent on a refused --retry-for", n)
	}
	for _, cmd := range []string{"run", "chat", "serve"} {
		if out, _, _ := cli(t, cmd, "--help"); !strings.Contains(out, "-retry-for DURATION") || !strings.Contains(out, "(default 2m0s)") {
			t.Errorf("%s --help does not offer --retry-for DURATION with its default 2m0s:\n%s", cmd, out)
		}
	}
}

// --retry-for reaches the agent (its retries of a stream cut before any
// output) as the wires get it; the test-only retries, while set, bounds
// the retries by count as before, the time bound off.
func TestRetryForIsTheAgentsRetryBound(t *testing.T) {
	for _, c := range []struct {
		args    []string
		retries int
		want    time.Duration
	}{
		{nil, 0, 2 * time.Minute},
		{[]string{"--retry-for", "10m"}, 0, 10 * time.Minute},
		{[]string{"--retry-for", "0"}, 0, 0},
		{[]string{"--retry-for", "10m"}, 1, 0},
	} {
		old := retries
		retries = c.retries
		s := openWith(t, c.args...)
		retries = old
		if s.agent.RetryFor != c.want {
			t.Errorf("%q with retries %d: the agent's RetryFor is %s, want %s", c.args, c.retries, s.agent.RetryFor, c.want)
		}
		if s.limiter == nil || s.limiter.Shared != nil {
			t.Errorf("%q: the process's limiter is %+v; want one, sharing nothing with a SQLite store", c.args, s.limiter)
		}
	}
}

// openWith opens run's session on the fake provider, in a new workspace,
// with args as run's flags.
func openWith(t *testing.T, args ...string) *session {
	t.Helper()
	var f agentFlags
	fs := f.set("run")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := f.check(explicit(fs)); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	fakeAnthropic(t, providertest.Step{Text: "done"})
	f.workspace = t.TempDir()
	s, err := open(context.Background(), f, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// With a Postgres store the process's limiter keeps its keys' states in
// the store's table: a retry-after it observes is there for every other
// process on the store, and for this one after a restart.
func TestWithAPostgresStoreTheLimiterIsSharedThroughIt(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	s := openWith(t, "--store", dsn)
	key := ratelimit.Key{Endpoint: "api.anthropic.com", Identity: ratelimit.Identity("test-key"), Model: "claude-test"}
	now := time.Now()
	if err := s.limiter.Observe(context.Background(), key, ratelimit.Observation{At: now, Status: 429, Limited: true, RetryAfter: time.Hour}); err != nil {
		t.Fatalf("observing a 429: %v", err)
	}
	other, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	st, found, err := other.RateLimits().Load(context.Background(), key)
	if err != nil || !found || st.NextAllowed.Before(now.Add(59*time.Minute)) {
		t.Fatalf("the store holds %+v (found %v, %v) for the key; want the 429's retry-after, an hour on", st, found, err)
	}
}

// limitedWire is a wire with a limiter in miniature: each request waits at
// the limiter for its key, telling its waits as a wire does
// (provider.NoticeWait), then goes on.
type limitedWire struct {
	provider.Provider
	limiter *ratelimit.Limiter
	key     ratelimit.Key
}

func (w limitedWire) WireName() string { return provider.WireName(w.Provider) }

func (w limitedWire) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	if _, err := w.limiter.Wait(ctx, w.key, func(until time.Time, why string) {
		provider.NoticeWait(ctx, provider.WaitNotice{Attempt: 1, Until: until, Why: why, URL: "http://" + w.key.Endpoint + "/v1/messages"})
	}); err != nil {
		return provider.Response{}, err
	}
	return w.Provider.Complete(ctx, req, onText)
}

// A request held at its key's rate limit is said on stderr, once per wait
// — not once for each time the limiter looks at the shared store while it
// waits — saying until when and why; the turn then goes on.
func TestAWaitAtTheRateLimitIsOneLineOnStderr(t *testing.T) {
	s := openWith(t)
	s.limiter.Shared, s.limiter.Poll = &ratelimittest.Memory{}, 5*time.Millisecond // looked at again and again while it waits
	key := ratelimit.Key{Endpoint: "127.0.0.1", Identity: ratelimit.Identity("test-key"), Model: s.agent.Model}
	if err := s.limiter.Observe(context.Background(), key, ratelimit.Observation{At: time.Now(), From: "127.0.0.1", Status: 429, Limited: true, RetryAfter: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	s.agent.Provider = limitedWire{Provider: s.agent.Provider, limiter: s.limiter, key: key}
	var out, errOut bytes.Buffer
	if code := s.turn(context.Background(), "hi", &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var waits []string
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, "waiting") {
			waits = append(waits, line)
		}
	}
	want := "for the rate limit of anthropic: 429 from 127.0.0.1: retry after"
	if len(waits) != 1 || !strings.HasPrefix(waits[0], "myelin: waiting until ") || !strings.Contains(waits[0], " UTC (") || !strings.Contains(waits[0], want) {
		t.Fatalf("stderr's waiting lines are %q; want one, \"myelin: waiting until HH:MM:SS UTC (...) %s ...\":\n%s", waits, want, errOut.String())
	}
	if out.String() != "done\n" {
		t.Errorf("stdout %q: the turn did not go on after its wait", out.String())
	}
}
