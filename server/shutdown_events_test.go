package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// Shutdown ends the event streams once every turn's last events were
// emitted, and a stream sends those before it ends: the end and the last
// event come together, and a watcher that took the end first left the
// event unsent (a turn.finished lost at serve's stop; seen as a flaky
// end-to-end test). Many times over, as the two arrive at once only now
// and then.
func TestAStreamSendsTheEventsEmittedBeforeTheServerEndedIt(t *testing.T) {
	for i := range 40 {
		f := newFixture(t)
		id := f.newConversation()
		w := f.watch(id)
		f.srv.emit(id, EventNotice, noticeEvent{Kind: "first", Text: "one"})
		if ev := w.next(t); ev.Type != EventNotice {
			t.Fatalf("run %d: the first event is %s", i, ev.Type)
		}
		f.srv.emit(id, EventNotice, noticeEvent{Kind: "last", Text: "emitted before the end"})
		f.srv.Shutdown(context.Background())
		rest, err := io.ReadAll(w.r)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("run %d: reading to the stream's end: %v", i, err)
		}
		if !strings.Contains(string(rest), "emitted before the end") {
			t.Fatalf("run %d: the stream ended without the event emitted before the server ended it; it sent %q", i, rest)
		}
	}
}
