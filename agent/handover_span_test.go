package agent

import (
	"context"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/myelin-run/myelin/provider/providertest"
)

// A turn handed over (ErrHandedOver: its process stops, another continues
// it) has not failed: its invoke_agent span is not an error — every
// deploy of a serve with workers would otherwise show its running turns
// as failed — and says it was handed over; the turn that continues it is
// a span of its own.
func TestAHandedOverTurnsSpanIsNoFailure(t *testing.T) {
	rec, _, _ := recording(t, false)
	r := newWireRig(t, "anthropic")
	hold := make(chan struct{})
	defer close(hold)
	r.srv.Push(providertest.Step{Text: "never finished", Hold: hold}, providertest.Step{Text: "the whole answer"})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.agent.Turn(ctx, r.id, "hi", nil)
		done <- err
	}()
	for len(r.srv.Requests()) == 0 {
		runtime.Gosched()
	}
	cancel(ErrHandedOver)
	if err := <-done; err == nil {
		t.Fatal("a turn handed over returned no error")
	}
	if _, err := r.agent.Continue(context.Background(), r.id, nil); err != nil {
		t.Fatalf("Continue after the hand-over: %v", err)
	}
	turns := named(rec.Ended(), "invoke_agent myelin")
	if len(turns) != 2 {
		t.Fatalf("%d invoke_agent spans; want the handed-over turn's and its continuation's", len(turns))
	}
	first := turns[0]
	if first.Status().Code == codes.Error {
		t.Errorf("the handed-over turn's span has status %v (error.type %v); want no error: the turn goes on elsewhere", first.Status(), attrs(first.Attributes())["error.type"].Emit())
	}
	wantString(t, "the handed-over turn's span", attrs(first.Attributes()), "myelin.turn.reason", "handed_over")
}
