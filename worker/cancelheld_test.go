package worker

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/server"
)

// A turn cancelled while its worker was dead, given back (rescue) while
// the dead worker's claim has not run out yet (a claim's heartbeat may
// outlive its process's last beat): the worker that takes the copy over
// finds the claim held and snoozes it, and ends the turn once the claim
// has run out. River turns a snoozed job carrying its own cancel key into
// a cancelled one without the turn being ended — so the copy carries the
// cancel under a key of myelin's (cancelAsked). From a review: before,
// the job was cancelled with the call left without a result.
func TestACancelledTurnWhoseDeadWorkersClaimIsStillHeldIsEndedOnceItRunsOut(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	run := func(context.Context, string, server.QueuedTurn) error { return nil }
	q := queuedWithADeadWorkersCall(t, s, run, Options{Workers: 1, Poll: 50 * time.Millisecond, Lease: 300 * time.Millisecond})
	// the dead worker's claim, still within its lease for two seconds
	if _, err := s.Claim(ctx, "c1", history.NewHolder(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	runningSince(t, s, "dead", "1 minute")
	cancelRunningAndStart(t, q)
	var state string
	var msgs []history.Message
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		state = newestJobState(t, s)
		msgs, _ = s.Messages(ctx, "c1")
		if state == "cancelled" {
			break
		}
	}
	if len(msgs) != 4 || msgs[2].Role != history.User || msgs[3].Role != history.Assistant || !msgs[3].Cut {
		t.Fatalf("job %s; stored %d messages, want the prompt, the call, its interrupted result and a cut answer: the turn was never ended", state, len(msgs))
	}
	if state != "cancelled" {
		t.Fatalf("the job given back is %s, want cancelled once the turn is ended", state)
	}
}
