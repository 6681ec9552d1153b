package background

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
)

// slowTake makes r's Manager take engines from engines only once the test
// lets it: each take says it began on began, then waits for go_. An
// engine pool's TryTake that finds no slot free ends an idle engine and
// waits for it to be reaped (script.Engines.TryTake: 4–12 ms measured,
// more for a big engine on a loaded machine).
func slowTake(r *rig, engines *script.Engines) (began chan struct{}, go_ chan struct{}) {
	began, go_ = make(chan struct{}, 10), make(chan struct{})
	r.m.take = func() *script.Slot {
		began <- struct{}{}
		<-go_
		return engines.TryTake()
	}
	return began, go_
}

// A Start whose engine takes long to take (an idle engine of another
// conversation ended for it) holds no other caller of the Manager: every
// turn's start asks it (Gone), every wake_agent and script's end, list
// and cancel. It held the Manager's lock through TryTake.
func TestATakeOfAnEngineHoldsNoOtherCallerOfTheManager(t *testing.T) {
	engines := script.NewEngines(3)
	r := newRigOn(t, Limits{Total: 2}, "", engines)
	other := r.start("c2", "await sleep(1e9)")
	began, go_ := slowTake(r, engines)
	started := make(chan result.Result, 1)
	go func() {
		started <- r.m.Start(tool.WithConversation(context.Background(), "c1"), "await sleep(1e9)", 0)
	}()
	<-began
	others := make(chan struct{})
	go func() {
		defer close(others)
		r.m.Gone("c3")
		r.m.List("c2")
		r.m.Running()
		if _, err := r.m.Cancel("c2", other); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-others:
	case <-time.After(10 * time.Second):
		t.Error("Gone, List, Running and Cancel still wait 10 s after a Start began to take an engine")
	}
	close(go_)
	<-others
	if res := <-started; res.IsError {
		t.Fatalf("Start: %v", res.Data)
	}
}

// A start that takes its engine outside the Manager's lock still counts
// toward the limits meanwhile: a second start in the conversation, or in
// the process, past a limit is refused, and a Close meanwhile leaves it
// refused and its engine freed.
func TestAStartTakingItsEngineCountsTowardTheLimits(t *testing.T) {
	engines := script.NewEngines(4)
	r := newRigOn(t, Limits{Running: 1, Total: 2}, "", engines)
	began, go_ := slowTake(r, engines)
	first := make(chan result.Result, 1)
	go func() {
		first <- r.m.Start(tool.WithConversation(context.Background(), "c1"), "await sleep(1e9)", 0)
	}()
	<-began
	res := r.m.Start(tool.WithConversation(context.Background(), "c1"), "1", 0)
	if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "1 background scripts are running or starting in this conversation, the limit") {
		t.Errorf("a second start in c1 while the first takes its engine: %q (error %v); want the conversation's limit", text, res.IsError)
	}
	second := make(chan result.Result, 1)
	go func() {
		second <- r.m.Start(tool.WithConversation(context.Background(), "c2"), "await sleep(1e9)", 0)
	}()
	<-began
	res = r.m.Start(tool.WithConversation(context.Background(), "c3"), "1", 0)
	if text, _ := res.Data.(string); !res.IsError || !strings.Contains(text, "2 background scripts are running or starting in this process") {
		t.Errorf("a third start in the process while two take their engines: %q (error %v); want the process's limit", text, res.IsError)
	}
	closed := make(chan struct{})
	go func() { r.m.Close(); close(closed) }()
	<-closed
	close(go_)
	for _, c := range []chan result.Result{first, second} {
		if res := <-c; !res.IsError || !strings.Contains(res.Data.(string), "myelin is stopping") {
			t.Errorf("a start that took its engine after Close: %#v; want it refused", res)
		}
	}
	if n := engines.Running(); n != 0 {
		t.Errorf("%s after the refused starts; want their engines freed", engines)
	}
}
