package tool

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// waitingRound runs a round of n calls that each wait until all n have
// started, so that they must run at once, through d.
func waitingRound(t *testing.T, d *Dispatcher, n int) {
	t.Helper()
	var arrived sync.WaitGroup
	arrived.Add(n)
	d.Tools = &Registry{}
	if err := d.Tools.Add(reads(MustFunc("wait", "Waits for the round.", func(ctx context.Context, in struct{}) (any, error) {
		arrived.Done()
		arrived.Wait()
		return "ok", nil
	}))); err != nil {
		t.Fatal(err)
	}
	calls := make([]Call, n)
	for i := range calls {
		calls[i] = Call{ID: fmt.Sprint(i), Name: "wait"}
	}
	for i, o := range d.Round(context.Background(), calls) {
		if o.IsError || o.Text != "ok" {
			t.Fatalf("call %d: %+v", i, o)
		}
	}
}

// idleAll waits, yielding, until every goroutine w started is idle.
func idleAll(w *Workers) int {
	for {
		live, idle := w.counts()
		if live == idle {
			return live
		}
		runtime.Gosched()
	}
}

// The calls of a round run at once on Workers as on a goroutine each, and
// the next round's run on the same goroutines: a round of n calls after
// one of n starts none.
func TestTheNextRoundRunsOnTheGoroutinesOfTheLast(t *testing.T) {
	const n = 10
	w := &Workers{}
	defer w.Close()
	d := &Dispatcher{Workers: w}
	waitingRound(t, d, n) // would never end if a call waited for another to start
	if live := idleAll(w); live != n {
		t.Fatalf("after a round of %d calls, %d goroutines kept", n, live)
	}
	waitingRound(t, d, n)
	if live := idleAll(w); live != n {
		t.Fatalf("a second round of %d calls left %d goroutines, want the same %d", n, live, n)
	}
	waitingRound(t, d, n+2) // wider: two more
	if live := idleAll(w); live != n+2 {
		t.Fatalf("a round of %d calls after ones of %d left %d goroutines", n+2, n, live)
	}
}

// Closing Workers ends every goroutine it kept, and one that was busy
// ends when its call returns.
func TestClosedWorkersKeepNoGoroutine(t *testing.T) {
	w := &Workers{}
	d := &Dispatcher{Workers: w}
	waitingRound(t, d, 4)
	idleAll(w)
	release := make(chan struct{})
	started := make(chan struct{})
	w.Go(func() { close(started); <-release })
	<-started
	w.Close()
	close(release)
	for {
		if live, _ := w.counts(); live == 0 {
			break
		}
		runtime.Gosched()
	}
	// after Close, a call still runs, on a goroutine that is not kept
	ran := make(chan struct{})
	w.Go(func() { close(ran) })
	<-ran
	for {
		if live, idle := w.counts(); live == 0 && idle == 0 {
			break
		}
		runtime.Gosched()
	}
}
