package ratelimit

import (
	"context"
	"testing"
	"time"
)

// A rate limit a provider reports inside a stream reaches the other
// processes sharing the key's limits, also when they sent and were
// answered while the stream ran: it is the provider's word as of now,
// taken as the answer to the latest request the shared state holds, not
// to the latest one the process that read it knew of (whose answer the
// others' newer answers had overtaken, and which Apply then dropped: the
// budget stayed at their 47).
func TestARefusalInsideAStreamReachesTheOtherProcesses(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	clock := newFakeClock(start)
	store := &memShared{}
	a := &Limiter{Clock: clock, Shared: store}
	b := &Limiter{Clock: clock, Shared: store}
	ctx := context.Background()

	// process A's request goes; its stream begins 200, 50 left
	w, err := a.Wait(ctx, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ObserveAnswer(ctx, testKey, w.Ticket, left(start, 50)); err != nil {
		t.Fatal(err)
	}
	// while A's answer streams, process B sends three and is answered
	for i := int64(0); i < 3; i++ {
		wb, err := b.Wait(ctx, testKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ObserveAnswer(ctx, testKey, wb.Ticket, left(start, 49-i)); err != nil {
			t.Fatal(err)
		}
	}
	// A's stream ends with a rate_limit_error
	o := inStream(start, `{"type":"error","error":{"type":"rate_limit_error","message":"m"}}`)
	if err := a.ObserveInStream(ctx, testKey, o); err != nil {
		t.Fatal(err)
	}
	st, _, _ := store.Load(ctx, testKey)
	if st.Remaining != 1 {
		t.Errorf("the store's budget after the rate limit inside A's stream is %d, want 1 (one goes first): the other processes go on at full speed", st.Remaining)
	}
	if got := a.State(testKey).Remaining; got != 1 {
		t.Errorf("A's own budget after the rate limit inside its stream is %d, want 1", got)
	}
}

// The same in one process: the refusal sets the budget whatever answers
// came while its stream ran.
func TestARefusalInsideAStreamSetsTheBudgetInOneProcess(t *testing.T) {
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	l := &Limiter{Clock: newFakeClock(start)}
	ctx := context.Background()
	w, _ := l.Wait(ctx, testKey, nil)
	_ = l.ObserveAnswer(ctx, testKey, w.Ticket, left(start, 50))
	for i := int64(0); i < 3; i++ {
		wb, _ := l.Wait(ctx, testKey, nil)
		_ = l.ObserveAnswer(ctx, testKey, wb.Ticket, left(start, 49-i))
	}
	o := inStream(start, `{"type":"error","error":{"type":"rate_limit_error","message":"m"}}`)
	_ = l.ObserveInStream(ctx, testKey, o)
	if got := l.State(testKey).Remaining; got != 1 {
		t.Errorf("budget %d, want 1", got)
	}
}

// An answer said again that carries a count of requests left (an
// Observation with limit headers given to ObserveInStream), taken as the
// answer to the latest request sent, still has the requests unanswered
// before that one taken off its count: the provider may not have counted
// them.
func TestAnAnswerSaidAgainWithACountTakesTheRequestsInFlightOff(t *testing.T) {
	at := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	st := State{Sent: 6, Answered: 3, Answers: 3, Remaining: 40}
	a := Answer{Ticket: Ticket{N: 3, Unanswered: 2}, At: at, Remaining: 10, Again: true}
	if got := st.Apply(a).Remaining; got != 10-2 {
		t.Errorf("budget %d after an answer said again of 10 left, taken as the answer to request 6 with 2 before it unanswered; want 8", got)
	}
}
