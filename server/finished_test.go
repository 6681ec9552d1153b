package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// nextOnFinished is an event log that, the moment a turn.finished is
// logged, starts the conversation's next turn, as a client does that
// starts it on reading turn.finished.
type nextOnFinished struct {
	EventLog
	once   sync.Once
	start  func() int
	status chan int
}

func (l *nextOnFinished) Append(ctx context.Context, conv, typ string, data json.RawMessage) error {
	if typ == EventTurnFinished {
		l.once.Do(func() { l.status <- l.start() })
	}
	return l.EventLog.Append(ctx, conv, typ, data)
}

// A turn is done before its turn.finished is logged: a client that
// starts the next turn on reading it got a 409 (the turn still running)
// now and then.
func TestTheNextTurnStartsAsSoonAsTurnFinishedIsLogged(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	var id string
	log := &nextOnFinished{EventLog: newMemoryEvents(0, 0, 0), status: make(chan int, 1)}
	log.start = func() int {
		status, _ := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"next"}`)
		return status
	}
	f.srv.Events = log
	id = f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "first")
	if status := <-log.status; status != http.StatusAccepted {
		t.Fatalf("the next turn, started as turn.finished was logged: %d, want %d", status, http.StatusAccepted)
	}
	w.until(t, EventTurnFinished)
	w.until(t, EventTurnFinished)
}
