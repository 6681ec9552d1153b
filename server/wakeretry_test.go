package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A wake whose turn another writer's claim refused is tried again after
// wakeRetry, not at once: when the requeue comes before the refused
// turn's goroutine ends (a legal order, forced here the first time), that
// goroutine's nextWake started the wake again at once, and each such
// race left one more retry chain running (a review's test).
func TestARefusedWakeIsTriedAgainOnlyAfterWakeRetry(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "done"})
	id := f.newConversation()
	if _, err := f.store.Claim(context.Background(), id, history.NewHolder(), time.Minute); err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	hook := func() {
		if refused.Add(1) != 1 {
			return
		}
		// the first time only: let the waker's requeue come first
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			f.srv.mu.Lock()
			c := f.srv.convs[id]
			f.srv.mu.Unlock()
			c.mu.Lock()
			n := len(c.wakes)
			c.mu.Unlock()
			if n > 0 {
				return
			}
		}
	}
	afterRefusedStart.Store(&hook)
	t.Cleanup(func() { afterRefusedStart.Store(nil) })
	f.srv.Wake(background.Wake{Conversation: id, Script: "bg_1", N: 1, Of: 1, Message: "[wake]"})
	time.Sleep(time.Second) // well under wakeRetry
	if n := refused.Load(); n != 1 {
		t.Fatalf("the wake's turn was refused %d times within 1s; want 1 (the next try after %v)", n, wakeRetry)
	}
}
