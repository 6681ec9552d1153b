package postgres_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/postgres"
	"github.com/myelin-run/myelin/history/postgres/pgtest"
	"github.com/myelin-run/myelin/history/storetest"
)

// Forks, rewinds, switches and appends taken one after another are cut
// off at random moments, sixteen times: by their context cancelled, or by
// the server ending their sessions (pg_terminate_backend, as a crash of
// the process or a cut network ends them). After each cut the store, read
// through the opening that was cut and through a fresh one, holds exactly
// what the run held before the step cut off or after it (its commit may
// have been done as the cut came), never half of it — no fork record
// without its link, no rows moved without the records that shared them
// pointed at where they went — and the run goes on from there.
func TestAWriteCutOffWhileForkingOrRewindingLeavesNoHalfBranch(t *testing.T) {
	steps, states := storetest.Steps(30, 600)
	name, _ := pgtest.Schema(t)
	app := "myelin-cut-" + name // the cut opening's sessions, for pg_terminate_backend
	open := func(dsn string) *postgres.Store {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := open(withParam(t, dsn(t), "application_name", app)), open(dsn(t))
	bg := context.Background()
	if err := s.Create(bg, history.Conversation{ID: storetest.Root}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(30, 2))
	from := 0
	for cut := range 16 {
		ctx, cancel := context.WithCancel(bg)
		var fired atomic.Bool
		how := "its context cancelled"
		end := func() { cancel() }
		if cut%2 == 1 {
			how = "its sessions ended by the server"
			end = func() {
				_, _ = other.Pool().Exec(bg, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
			}
		}
		timer := time.AfterFunc(time.Duration(5+r.IntN(60))*time.Millisecond, func() { end(); fired.Store(true) })
		done := from
		var stepErr error
		for ; done < len(steps); done++ {
			wasFired := fired.Load()
			if stepErr = steps[done].Do(ctx, s); stepErr != nil || wasFired {
				break
			}
		}
		if stepErr == nil && done < len(steps) {
			done++ // the step taken after the cut came, and done
		}
		timer.Stop()
		cancel()
		if done == len(steps) {
			t.Fatalf("cut %d: all %d steps were taken before it; want it among them (more steps)", cut+1, len(steps))
		}
		k, err := storetest.Matching(bg, open(dsn(t)), states, from)
		if err != nil {
			t.Fatalf("cut %d (%s) in step %d (%s), after %v: read by a fresh opening: %v", cut+1, how, done, steps[done], stepErr, err)
		}
		// Matching names the first state the store holds; a step that
		// changes nothing a reader sees (a switch between branches holding
		// the same texts) makes that an earlier one than the step cut.
		switch {
		case storetest.Same(states[k], states[done]):
			k = done
		case storetest.Same(states[k], states[done+1]):
			k = done + 1
		default:
			t.Fatalf("cut %d (%s) in step %d (%s), after %v: the store holds what it held after step %d; want %d or %d, before or after the step cut", cut+1, how, done, steps[done], stepErr, k, done, done+1)
		}
		if again, err := storetest.Matching(bg, s, states, from); err != nil || !storetest.Same(states[again], states[k]) {
			t.Fatalf("cut %d (%s) in step %d (%s): read by the opening that was cut: state %d, %v; want %d, as a fresh opening reads", cut+1, how, done, steps[done], again, err, k)
		}
		t.Logf("cut %d (%s): %d steps taken, then step %d (%s) cut (%v): the store is as after step %d", cut+1, how, done-from, done, steps[done], stepErr, k)
		from = k
	}
}
