package script

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// gate is a tool that holds each call until the test opens it, and counts
// the calls inside it at once: each is a script with its engine alive.
type gate struct {
	open          chan struct{}
	inside, most  atomic.Int32
	entered, left atomic.Int32
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) tool() *tool.Tool {
	return tool.MustFunc("test--gate", "Waits for the test.", func(ctx context.Context, _ struct{}) (any, error) {
		n := g.inside.Add(1)
		g.entered.Add(1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		defer g.inside.Add(-1)
		defer g.left.Add(1)
		select {
		case <-g.open:
			return "passed", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// until waits for cond, checking it every few milliseconds; a hang guard,
// not a measure: the test fails only when cond never comes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for stop := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(stop) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// Scripts of every conversation shared no bound: each call started its
// engine (up to 256 MiB) at once. Beyond Config.Engines a script of one
// call waits for an engine, and runs once one is free.
func TestScriptsBeyondTheEngineLimitWaitForAnEngine(t *testing.T) {
	const limit, scripts = 2, 5
	g := newGate()
	r := newRig(t, Limits{}, g.tool())
	engines := NewEngines(limit)
	c := Config{Tools: r.reg, Engines: engines}
	var wg sync.WaitGroup
	results := make([]string, scripts)
	for i := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := Run(context.Background(), c, Limits{}, `const r = await tools["test--gate"]({}); return r.content[0].text`)
			results[i] = fmt.Sprintf("%v error=%v", res.Data, res.IsError)
		}()
	}
	// Either every script is inside at once (no bound), or the limit's
	// worth are, and the others wait for an engine.
	until(t, "the scripts to be inside the tool or waiting for an engine", func() bool {
		return g.inside.Load() == scripts || (g.inside.Load() == limit && engines.waiting.Load() == scripts-limit)
	})
	if n := g.most.Load(); n > limit {
		t.Errorf("%d scripts ran at once, over the limit of %d engines", n, limit)
	}
	close(g.open)
	wg.Wait()
	for i, res := range results {
		if res != "passed error=false" {
			t.Errorf("script %d: %s; want it to run once an engine was free", i, res)
		}
	}
	if n := engines.Running(); n != 0 {
		t.Errorf("%d engines still taken after every script ended", n)
	}
}

// A script of one call that finds no engine within its time limit, or is
// cancelled while it waits, is an error result that names the limit and
// the flag that raises it; a background script finds one free at once or
// does not start.
func TestAScriptThatGetsNoEngineSaysWhichLimit(t *testing.T) {
	g := newGate()
	r := newRig(t, Limits{}, g.tool())
	engines := NewEngines(1)
	c := Config{Tools: r.reg, Engines: engines}
	held := make(chan struct{})
	go func() {
		defer close(held)
		Run(context.Background(), c, Limits{}, `await tools["test--gate"]({})`)
	}()
	until(t, "the first script to hold the engine", func() bool { return g.inside.Load() == 1 })

	res := Run(context.Background(), c, Limits{Time: 200 * time.Millisecond}, `return 1`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "all 1 script engines this process may run at once (myelin's --script-engines) were busy for its whole time limit of 200ms") {
		t.Errorf("waiting past its time limit: %q (error %v); want the engine limit named", text, res.IsError)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = Run(ctx, c, Limits{}, `return 1`)
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "cancelled while it waited for a script engine") {
		t.Errorf("cancelled while waiting: %q (error %v)", text, res.IsError)
	}
	var w wakes
	res = RunBackground(context.Background(), c, Limits{}, `return 1`, w.hooks())
	if text := fmt.Sprint(res.Data); !res.IsError || !strings.Contains(text, "the background script did not start: all 1 script engines this process may run at once are busy") || !strings.Contains(text, "--script-engines") {
		t.Errorf("a background script with no engine free: %q (error %v)", text, res.IsError)
	}
	close(g.open)
	<-held
	// A slot taken ahead is the one the background script runs in, and is
	// freed when it ends.
	slot := engines.TryTake()
	if slot == nil {
		t.Fatal("no engine free once the first script ended")
	}
	h := w.hooks()
	h.Slot = slot
	if res := RunBackground(context.Background(), c, Limits{}, `return 1`, h); res.IsError {
		t.Errorf("a background script in the slot taken for it: %v", res.Data)
	}
	if n := engines.Running(); n != 0 {
		t.Errorf("%d engines taken after the background script ended; want its slot freed", n)
	}
}
