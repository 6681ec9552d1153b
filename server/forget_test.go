package server

import (
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
	for i := range ids {
		ids[i] = f.newConversation()
		w := f.watch(ids[i])
		f.turn(t, w, ids[i], "go")
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
	w := f.watch(ids[0])
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
