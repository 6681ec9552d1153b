package worker

// This file tests that River's own rescuer never finishes a turn's job
// behind the workers' back (Queue's RescueStuckJobsAfter).

import (
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/server"
)

// A turn's job cancelled while it ran, whose worker is not (yet) seen
// dead and which has run for longer than River's default stuck-job
// horizon (an hour): River's own rescuer would mark it cancelled as it
// rescues it — without the turn being ended (agent.EndCancelled), so the
// conversation kept its call without a result and no one would finish
// the turn. Only the workers' rescue (rescue.go), which gives the job
// back to a worker that ends it, may take it: River's stays out. (It made
// TestATurnCancelledWhileItsWorkerWasDeadIsNotRunByTheNext fail now and
// then, whichever of the two rescuers ran first.)
func TestRiversOwnRescuerNeverCancelsATurnsJob(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	run := func(context.Context, string, server.QueuedTurn) error { return nil }
	q := queuedWithADeadWorkersCall(t, s, run, Options{Workers: 1, Poll: 50 * time.Millisecond, Lease: 300 * time.Millisecond})
	// its worker still beats (so the workers' rescue leaves the job), and
	// took the job two hours ago; then the cancel came
	if _, err := s.Pool().Exec(ctx, `INSERT INTO myelin_workers (id, beat) VALUES ('slow', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	runningSince(t, s, "slow", "2 hours")
	cancelRunningAndStart(t, q)
	// River's rescuer runs on the elected leader, at once once elected
	// (it rescued such a job within a second or two here); give it ten
	var state string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		state = newestJobState(t, s)
		if state != "running" {
			break
		}
	}
	if state != "running" {
		t.Fatalf("the job of a turn its living worker runs is %s, changed by River's own rescuer; want it left running", state)
	}
}
