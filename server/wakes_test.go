package server

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A wake that comes while a client's turn runs is emitted at once, and
// its turn runs after that one; two wakes run in the order they came.
func TestAWakeIsEmittedAndItsTurnQueuedBehindTheRunningOne(t *testing.T) {
	hold := make(chan struct{})
	f := newFixture(t,
		providertest.Step{Text: "first", Hold: hold},
		providertest.Step{Text: "woken once"},
		providertest.Step{Text: "woken twice"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	w.until(t, EventTurnStarted)
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 2, Message: "[wake 1]\none"})
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 2, Of: 2, Message: "[wake 2]\ntwo"})
	evs := w.until(t, EventWake)
	evs = append(evs, w.until(t, EventWake)...)
	close(hold)
	var prompts []string
	for finished := 0; finished < 3; {
		e := w.next(t)
		evs = append(evs, e)
		switch e.Type {
		case EventTurnFinished:
			finished++
		case EventTurnStarted:
			var s turnStartedEvent
			mustJSON(t, e.Data, &s)
			prompts = append(prompts, s.Prompt)
		}
	}
	if len(prompts) != 2 || prompts[0] != "[wake 1]\none" || prompts[1] != "[wake 2]\ntwo" {
		t.Fatalf("the woken turns' prompts %q (events %v)", prompts, types(evs))
	}
	msgs, _ := f.store.Messages(context.Background(), id)
	var stored []string
	for _, m := range msgs {
		if m.Role == history.User {
			stored = append(stored, m.Parts[0].Text)
		}
	}
	if len(stored) != 3 || stored[1] != prompts[0] || stored[2] != prompts[1] {
		t.Fatalf("stored prompts %q", stored)
	}
}

// With workers, a wake's turn is queued like a client's: its message
// stored with the turn's job, and a worker runs it.
func TestWithWorkersAWakesTurnIsQueued(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "woken"})
	q := &memQueue{store: f.store, pending: map[string]QueuedTurn{}, jobs: make(chan QueuedTurn, 4)}
	f.srv.Queue = q
	id := f.newConversation()
	w := f.watch(id)
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]\npayload"})
	w.until(t, EventWake)
	job := <-q.jobs
	if err := f.srv.RunQueued(context.Background(), id, job); err != nil {
		t.Fatal(err)
	}
	evs := w.until(t, EventTurnFinished)
	var started turnStartedEvent
	mustJSON(t, evs[0].Data, &started)
	if evs[0].Type != EventTurnStarted || started.Turn != job.Turn || started.Prompt != "[wake]\npayload" {
		t.Fatalf("events %v, the first %s", types(evs), evs[0].Data)
	}
}
