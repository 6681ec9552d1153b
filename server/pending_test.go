package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A turn's end waits for the end event of each of its asks whose calls
// have ended (the asker is about to emit it) — an approval's one call,
// an elicitation's every call, seen ended as soon as their cancel begins
// — and not for an ask of another turn or one whose call goes on.
func TestATurnsEndWaitsForTheEndEventsOfTheAsksItsCallsLeft(t *testing.T) {
	wait := tellWait
	t.Cleanup(func() { tellWait = wait })
	tellWait = time.Hour // a wait for the wrong ask hangs: the guard below says so
	var as asks
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	approvalAsk := newAsk(kindApproval, "a1", "conv", "turn", time.Hour, ended)
	elicitation := newAsk(kindElicitation, "e1", "conv", "turn", time.Hour, ended, ended)
	goesOn := newAsk(kindApproval, "a2", "conv", "turn", time.Hour, other)
	partly := newAsk(kindElicitation, "e2", "conv", "turn", time.Hour, ended, other)
	otherTurn := newAsk(kindApproval, "a3", "conv", "another turn", time.Hour, ended)
	for _, a := range []*ask{approvalAsk, elicitation, goesOn, partly, otherTurn} {
		as.add(a)
	}
	var told atomic.Int32
	// the elicitation told well after the approval: a wait for the
	// first alone is caught every time
	for i, a := range []*ask{approvalAsk, elicitation} {
		go func() {
			time.Sleep(time.Duration(20+200*i) * time.Millisecond)
			told.Add(1)
			as.told(a)
		}()
	}
	returned := make(chan struct{})
	go func() {
		as.toldBefore("conv", "turn")
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn's end waited for an ask of another turn, or one whose call goes on")
	}
	if n := told.Load(); n != 2 {
		t.Fatalf("the turn's end did not wait for the end events of the asks its cancelled calls left (%d of 2 told)", n)
	}
}

// A turn cancelled while an MCP server's question waits: its
// elicitation.expired comes before the turn's turn.finished.
func TestAnElicitationWhoseTurnIsCancelledEndsBeforeTurnFinished(t *testing.T) {
	f := newAskFixture(t, callElicit...)
	a := f.asked(t)
	if status, body := f.do("POST", "/v1/conversations/"+a.id+"/turns/"+a.ts.Turn+"/cancel", ""); status != 200 {
		t.Fatalf("cancel: %d %s", status, body)
	}
	evs := a.w.until(t, EventTurnFinished)
	for _, e := range evs {
		if e.Type == EventElicitationExpired || e.Type == EventElicitationAnswered {
			return
		}
	}
	after := a.w.until(t, EventElicitationExpired) // it comes after: then the fixture's MCP server closes
	t.Fatalf("turn.finished came before the elicitation's end: %v, then %v", types(evs), types(after))
}
