package server

import (
	"sync/atomic"
	"testing"
	"time"
)

// A turn's end waits for the end event of each of its asks whose call
// has ended (the asker is about to emit it), and not for an ask of
// another turn or one whose call goes on.
func TestATurnsEndWaitsForTheEndEventsOfTheAsksItsCallsLeft(t *testing.T) {
	var as asks
	ended, live := make(chan struct{}), make(chan struct{})
	close(ended)
	mine := newAsk(kindApproval, "a1", "conv", "turn", time.Hour, ended)
	goesOn := newAsk(kindApproval, "a2", "conv", "turn", time.Hour, live)
	other := newAsk(kindApproval, "a3", "conv", "another turn", time.Hour, ended)
	for _, a := range []*ask{mine, goesOn, other} {
		as.add(a)
	}
	mine.state = "expired" // ended by its asker, its event not yet emitted
	var told atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond)
		told.Store(true)
		mine.told()
	}()
	as.toldBefore("conv", "turn")
	if !told.Load() {
		t.Fatal("the turn's end did not wait for the end event of the ask its cancelled call left")
	}
}
