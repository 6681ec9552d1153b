package script

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Each script's engine is a process of up to Limits.Memory (256 MiB by
// default): what the limits of one script bound, many scripts at once
// multiply. Eight conversations with their three background scripts each
// had 25 engines alive (3.2 GB). Engines bounds them in the process, all
// conversations, subagents and background scripts together
// (docs/scripts.md, "Engines in a process").

// DefaultEngines is how many engines a process runs at once unless
// Config.Engines says otherwise.
const DefaultEngines = 8

// MaxEngines is the most engines an Engines may allow: past it the bound
// bounds nothing a machine has.
const MaxEngines = 1024

// Engines bounds the engine processes alive at once in a process: those of
// scripts of one call, which wait for one (within their time limit), and
// those of background scripts, which take one at once or are refused. Its
// methods are safe for concurrent use. A program makes one and gives it to
// every Config (Config.Engines), or leaves that nil for the package's own,
// which every Config without one shares; two Engines bound two sets of
// scripts apart, not the process.
type Engines struct {
	slots   chan struct{}
	waiting atomic.Int32 // scripts waiting for an engine (take)
	pool    *pool        // what it keeps between scripts; nil for none (pool.go)
}

// NewEngines is a bound of n engines at once (DefaultEngines when n is 0
// or less, MaxEngines at the most).
func NewEngines(n int) *Engines {
	if n <= 0 {
		n = DefaultEngines
	}
	return &Engines{slots: make(chan struct{}, min(n, MaxEngines))}
}

// processEngines bounds the scripts of every Config that names no Engines.
var processEngines = NewEngines(DefaultEngines)

// Limit is how many engines may be alive at once.
func (e *Engines) Limit() int { return cap(e.slots) }

// Running is how many engines are taken now by scripts (or ahead of
// them): not those a pool keeps idle or started ahead. The two counts are
// read one after the other, not at one instant, so it is never below 0
// but may be off by one while an engine is kept or taken.
func (e *Engines) Running() int { return max(len(e.slots)-e.kept(), 0) }

// Slot is one engine of an Engines, taken: by the script that runs in it,
// or ahead of a background script (Hooks.Slot) by the runner that must say
// at once whether the script starts.
type Slot struct {
	e    *Engines
	once sync.Once
}

// Free gives the engine back; safe to call more than once.
func (s *Slot) Free() {
	s.once.Do(func() { <-s.e.slots })
}

// handOver is s, given to a new holder: the engine that held it is gone.
func (s *Slot) handOver() *Slot {
	s.once.Do(func() {})
	return &Slot{e: s.e}
}

// TryTake takes an engine if one is free now, or ends one a pool keeps
// idle and takes its place, else returns nil.
func (e *Engines) TryTake() *Slot {
	if s := e.tryFree(); s != nil {
		return s
	}
	return e.evict()
}

// tryFree takes a free slot, else returns nil.
func (e *Engines) tryFree() *Slot {
	select {
	case e.slots <- struct{}{}:
		return &Slot{e: e}
	default:
		return nil
	}
}

// take waits for an engine until deadline or until ctx ends, and returns
// nil then.
func (e *Engines) take(ctx context.Context, deadline time.Time) *Slot {
	if s := e.TryTake(); s != nil {
		return s
	}
	// Counted as waiting before looking again: an engine going idle
	// meanwhile is then either ended for this script (release sees the
	// count) or found here and ended.
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	if s := e.TryTake(); s != nil {
		return s
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case e.slots <- struct{}{}:
		return &Slot{e: e}
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// EnginePool is the Engines c's scripts run under: c.Engines, or the
// package's own.
func (c Config) EnginePool() *Engines {
	if c.Engines != nil {
		return c.Engines
	}
	return processEngines
}

// Busy is what a background script that finds no engine free is told: the
// limit, the flag that raises it, and what to do.
func (e *Engines) Busy() string {
	return fmt.Sprintf("all %d script engines this process may run at once are busy (scripts of calls and background scripts, of every conversation; myelin's --script-engines raises the limit): stop a background script with code_execution--cancel, or try again once other scripts have ended", e.Limit())
}

// engineFor is the engine process a script of conv runs in: the one the
// pool kept for conv, or one started ahead, or else one started now in
// the slot slotFor takes. When there is none it returns the error
// result's text.
func (r *run) engineFor(ctx context.Context, h *Hooks, conv string) (*engineProc, string) {
	pool := r.c.EnginePool()
	if p := pool.claim(conv); p != nil {
		if h != nil && h.Slot != nil {
			h.Slot.Free() // the kept engine holds a slot of its own
		}
		return p, ""
	}
	slot, busy := r.slotFor(ctx, h)
	if slot == nil {
		return nil, busy
	}
	p, err := pool.started(slot)
	if err != nil {
		slot.Free()
		return nil, fmt.Sprintf("starting the script engine: %v", err)
	}
	return p, ""
}

// slotFor is the engine a script runs in: the one its runner took ahead
// (h.Slot), or, for a background script, one free now, or, for a script of
// one call, the first to be free before its deadline. When there is none
// it returns the error result's text.
func (r *run) slotFor(ctx context.Context, h *Hooks) (*Slot, string) {
	pool := r.c.EnginePool()
	switch {
	case h != nil && h.Slot != nil:
		return h.Slot, ""
	case h != nil:
		if s := pool.TryTake(); s != nil {
			return s, ""
		}
		return nil, "the background script did not start: " + pool.Busy()
	}
	if s := pool.take(ctx, r.deadline); s != nil {
		return s, ""
	}
	if ctx.Err() != nil {
		return nil, fmt.Sprintf("the script was cancelled while it waited for a script engine (all %d this process may run at once were busy)", pool.Limit())
	}
	return nil, fmt.Sprintf("the script did not start: all %d script engines this process may run at once (myelin's --script-engines) were busy for its whole time limit of %v, which the wait counts toward; try again once other scripts have ended", pool.Limit(), r.lim.Time)
}
