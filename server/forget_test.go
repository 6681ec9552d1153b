package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/provider/providertest"
)

// entries is how many conversations the server holds an entry of.
func (s *Server) entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.convs)
}

// A server that has served many conversations does not keep an entry of
// each for ever: once nothing of a conversation runs here and its idle
// period has passed, its entry is dropped (as its events are), and a
// later turn of it makes a new one.
func TestAServerForgetsTheConversationsIdleForTheirIdlePeriod(t *testing.T) {
	const n = 5
	steps := make([]providertest.Step, n+1)
	for i := range steps {
		steps[i] = providertest.Step{Text: "done"}
	}
	f := newFixture(t, steps...)
	f.srv.EventsIdle = 200 * time.Millisecond
	ids := make([]string, n)
	lastSeq := make([]int64, n)
	for i := range ids {
		ids[i] = f.newConversation()
		w := f.watch(ids[i])
		f.startTurn(ids[i], "go")
		evs := w.until(t, EventTurnFinished)
		lastSeq[i] = evs[len(evs)-1].Seq
	}
	gone := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for f.srv.entries() > want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := f.srv.entries(); got != want {
			t.Fatalf("the server holds %d conversations' entries 10 s after their turns ended, want %d", got, want)
		}
	}
	gone(0)
	// resumed after the events it had: not its first turn's end again,
	// whether or not the log still keeps them
	w := f.watch(ids[0], "Last-Event-ID", fmt.Sprint(lastSeq[0]))
	f.turn(t, w, ids[0], "again")
	if got := f.texts(t, ids[0]); got != "go|done|again|done" {
		t.Fatalf("the conversation whose entry was dropped reads %q after its next turn", got)
	}
	gone(0)
}

// An entry is kept while its conversation has a turn running here or a
// wake waiting for one, however long since it was used.
func TestAConversationWithATurnRunningOrAWakeWaitingIsNotForgotten(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	later := time.Now().Add(24 * time.Hour)

	c := f.srv.lockedConv(id)
	c.wakes = append(c.wakes, background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]"})
	c.mu.Unlock()
	f.srv.forgetIdle(later)
	if f.srv.entries() != 1 || c.gone {
		t.Fatalf("an entry with a wake waiting was dropped")
	}

	c.mu.Lock()
	c.wakes = nil
	c.turn = &running{id: "t1", done: make(chan struct{})}
	c.mu.Unlock()
	f.srv.forgetIdle(later)
	if f.srv.entries() != 1 || c.gone {
		t.Fatalf("an entry with a turn running was dropped")
	}

	c.mu.Lock()
	close(c.turn.done)
	c.mu.Unlock()
	f.srv.forgetIdle(later)
	if f.srv.entries() != 0 || !c.gone {
		t.Fatalf("an idle entry was kept past its idle period")
	}
	if d := f.srv.lockedConv(id); d == c {
		t.Fatalf("a dropped entry was taken again")
	} else {
		d.mu.Unlock()
	}
}

// A wake that comes for a conversation whose entry was dropped runs its
// turn: it lands in a new entry, not in the dropped one.
func TestAWakeOfAForgottenConversationRunsItsTurn(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "first"}, providertest.Step{Text: "woken"})
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "go")
	f.srv.forgetIdle(time.Now().Add(24 * time.Hour))
	if n := f.srv.entries(); n != 0 {
		t.Fatalf("%d entries after the sweep", n)
	}
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]"})
	w.until(t, EventTurnFinished)
	if got := f.texts(t, id); got != "go|first|[wake]|woken" {
		t.Fatalf("the conversation after its wake reads %q", got)
	}
}

// An entry used less than the idle period ago is kept; once that long
// has passed, it is dropped.
func TestAnEntryIsKeptUntilItHasGoneUnusedForTheIdlePeriod(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done"})
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "go")
	f.srv.forgetIdle(time.Now())
	if n := f.srv.entries(); n != 1 {
		t.Fatalf("a sweep right after the turn ended left %d entries, want its 1", n)
	}
	f.srv.forgetIdle(time.Now().Add(DefaultEventsIdle - time.Minute))
	if n := f.srv.entries(); n != 1 {
		t.Fatalf("a sweep a minute before the idle period ended left %d entries, want 1", n)
	}
	f.srv.forgetIdle(time.Now().Add(DefaultEventsIdle))
	if n := f.srv.entries(); n != 0 {
		t.Fatalf("a sweep once the idle period ended left %d entries, want 0", n)
	}
}

// A caller that looked an entry up just before a sweep dropped it takes
// the new one: a wake or a turn never lands in a dropped entry. (From a
// review of the first version, whose tests did not reach this.)
func TestATakerOfAnEntryDroppedMeanwhileTakesTheNewOne(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	c := f.srv.lockedConv(id) // held: the taker below waits for c.mu after its lookup
	got := make(chan *conversation)
	go func() { got <- f.srv.lockedConv(id) }()
	time.Sleep(100 * time.Millisecond) // most likely the taker has looked c up by now; either way it must not get c
	f.srv.mu.Lock()                    // what a sweep does to c while it holds c.mu
	c.gone = true
	delete(f.srv.convs, id)
	f.srv.mu.Unlock()
	c.mu.Unlock()
	d := <-got
	d.mu.Unlock()
	if d == c {
		t.Fatal("lockedConv returned the entry a sweep had dropped")
	}
	f.srv.mu.Lock()
	in := f.srv.convs[id]
	f.srv.mu.Unlock()
	if in != d {
		t.Fatal("the entry lockedConv returned is not the one the server holds")
	}
}

// A closed server sweeps no more: neither its entries nor its events'
// logs are kept reachable by a timer after Close.
func TestAClosedServerStopsItsSweeps(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done"}, providertest.Step{Text: "woken"})
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "go")
	f.srv.Close()
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]"})
	f.srv.mu.Lock()
	entries := f.srv.forgetting != nil
	f.srv.mu.Unlock()
	m := f.srv.log.(*memoryEvents)
	m.mu.Lock()
	logs := m.timer != nil
	m.mu.Unlock()
	if entries || logs {
		t.Fatalf("after Close a sweep is still due: of the entries %v, of the events %v", entries, logs)
	}
}

// A queued turn that a worker of this server runs keeps its
// conversation's entry while it runs, however long.
func TestAQueuedTurnRunningHereKeepsItsEntry(t *testing.T) {
	hold := make(chan struct{})
	f := newFixture(t, providertest.Step{Text: "woken", Hold: hold})
	q := &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	f.srv.Queue = q
	id := f.newConversation()
	w := f.watch(id)
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]"})
	job := <-q.jobs
	ran := make(chan error, 1)
	go func() { ran <- f.srv.RunQueued(context.Background(), id, job) }()
	w.until(t, EventTurnStarted)
	later := time.Now().Add(24 * time.Hour)
	f.srv.forgetIdle(later)
	if n := f.srv.entries(); n != 1 {
		t.Fatalf("a queued turn runs, and the server holds %d entries, want its 1", n)
	}
	close(hold)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	f.srv.forgetIdle(later)
	if n := f.srv.entries(); n != 0 {
		t.Fatalf("the queued turn ended, and the server holds %d entries, want 0", n)
	}
}
