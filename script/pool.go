package script

import (
	"fmt"
	"sync"
	"time"
)

// Starting an engine process costs 10–50 ms (the Go runtime and the
// package inits of the whole executable): more than the script most often
// runs. An Engines made by NewPooledEngines keeps engines between scripts
// (docs/scripts.md, "The engine pool"): a few started ahead, never used,
// which any script may take; and those that ran a script, each bound to
// the conversation it ran for, which only that conversation's next script
// may take. An engine never goes from one conversation to another: what a
// script leaves in the process (the allocator's pages, a bug of the engine
// we do not know of) stays with the conversation that made it. Each script
// still gets a fresh engine runtime of its own inside the process
// (engine.go), so nothing of one script is visible to the next.
//
// Every engine kept counts toward the Engines' limit, as a running one
// does: a script that finds no slot free ends an idle engine of another
// conversation and takes its slot, and an engine that a waiting script
// could use is ended rather than kept.

// Pool says how an Engines keeps engine processes between scripts.
type Pool struct {
	// Warm is how many never-used engines are kept started ahead
	// (DefaultWarm when 0): a script that finds one starts at once, and
	// another is started in the background to replace it.
	Warm int
	// Scripts is how many scripts one engine runs before it is ended and
	// replaced (DefaultScripts when 0).
	Scripts int
	// Idle is how long an engine waits for a script before it is ended
	// (DefaultIdle when 0, MaxIdle at the most). An engine that nothing
	// ends (myelin lost track of it) ends itself MaxIdle plus engineGrace
	// after its last script.
	Idle time.Duration
}

// Defaults of Pool.
const (
	DefaultWarm    = 1
	DefaultScripts = 100
	DefaultIdle    = time.Minute
	MaxIdle        = 10 * time.Minute
)

func (p Pool) withDefaults() Pool {
	if p.Warm <= 0 {
		p.Warm = DefaultWarm
	}
	if p.Scripts <= 0 {
		p.Scripts = DefaultScripts
	}
	if p.Idle <= 0 {
		p.Idle = DefaultIdle
	}
	p.Idle = min(p.Idle, MaxIdle)
	return p
}

// NewPooledEngines is a bound of n engines at once, as NewEngines is,
// that keeps engine processes between scripts as p says. Its owner must
// Close it: that ends the engines it keeps.
func NewPooledEngines(n int, p Pool) *Engines {
	e := NewEngines(n)
	p = p.withDefaults()
	p.Warm = min(p.Warm, e.Limit())
	e.pool = &pool{cfg: p}
	return e
}

// pool is what an Engines keeps between scripts. Every engine in it holds
// a slot of its Engines.
type pool struct {
	cfg      Pool
	mu       sync.Mutex
	fresh    []*engineProc // started ahead, never used
	idle     []*engineProc // bound to a conversation, oldest first
	starting int           // fresh engines being started
	// launching are the engines started ahead and not ready yet: Close
	// kills them rather than wait for their inits.
	launching []*conn
	closed    bool
	refills   sync.WaitGroup
}

// engineProc is one engine process and the slot it holds.
type engineProc struct {
	*conn
	slot  *Slot
	conv  string // the conversation it ran scripts for; "" while fresh
	used  int    // scripts it ran
	kept  bool   // it waited in the pool (started ahead, or idle)
	timer *time.Timer
}

// end kills the engine, waits for it, and frees its slot: what it said
// when it went away on its own.
func (p *engineProc) end() string {
	p.kill()
	said := p.wait()
	p.slot.Free()
	return said
}

// Close ends the engines kept idle or started ahead, and makes every
// engine in use end with its script. A script started after Close starts
// an engine of its own and ends it, as with NewEngines. Safe to call more
// than once; a no-op for an Engines made by NewEngines.
func (e *Engines) Close() {
	pl := e.pool
	if pl == nil {
		return
	}
	pl.mu.Lock()
	pl.closed = true
	ended := append(pl.fresh, pl.idle...)
	pl.fresh, pl.idle = nil, nil
	for _, c := range pl.launching {
		c.kill()
	}
	pl.mu.Unlock()
	for _, p := range ended {
		p.timer.Stop()
		p.end()
	}
	pl.refills.Wait()
}

// claim takes, for a script of conv, the idle engine conv's last script
// ran in, or else one started ahead; release starts its replacement. It
// returns nil when there is neither.
func (e *Engines) claim(conv string) *engineProc {
	pl := e.pool
	if pl == nil {
		return nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return nil
	}
	if conv != "" {
		for i := len(pl.idle) - 1; i >= 0; i-- {
			if p := pl.idle[i]; p.conv == conv {
				pl.idle = append(pl.idle[:i], pl.idle[i+1:]...)
				p.timer.Stop()
				return p
			}
		}
	}
	if n := len(pl.fresh); n > 0 {
		p := pl.fresh[n-1]
		pl.fresh = pl.fresh[:n-1]
		p.timer.Stop()
		return p
	}
	return nil
}

// evict ends the idle engine that has waited longest (a fresh one when
// none is bound) and hands its slot over, or returns nil when the pool
// keeps none.
func (e *Engines) evict() *Slot {
	pl := e.pool
	if pl == nil {
		return nil
	}
	pl.mu.Lock()
	var p *engineProc
	switch {
	case len(pl.idle) > 0:
		p, pl.idle = pl.idle[0], pl.idle[1:]
	case len(pl.fresh) > 0:
		p, pl.fresh = pl.fresh[0], pl.fresh[1:]
	}
	pl.mu.Unlock()
	if p == nil {
		return nil
	}
	p.timer.Stop()
	p.kill()
	p.wait()
	return p.slot.handOver()
}

// started is an engine started for a script in slot, which found none
// kept for it.
func (e *Engines) started(slot *Slot) (*engineProc, error) {
	cn, err := startEngine()
	if err != nil {
		return nil, err
	}
	return &engineProc{conn: cn, slot: slot}, nil
}

// refillLocked starts engines ahead in the background, up to Pool.Warm,
// with the slots free now and while no script waits for one; pl.mu is
// held.
func (e *Engines) refillLocked() {
	pl := e.pool
	for !pl.closed && len(pl.fresh)+pl.starting < pl.cfg.Warm && e.waiting.Load() == 0 {
		slot := e.tryFree()
		if slot == nil {
			return
		}
		pl.starting++
		pl.refills.Add(1)
		go func() {
			defer pl.refills.Done()
			cn, err := launchEngine()
			if err == nil {
				pl.mu.Lock()
				pl.launching = append(pl.launching, cn)
				if pl.closed {
					cn.kill() // Close came first: ready fails at once
				}
				pl.mu.Unlock()
				err = cn.ready()
			}
			pl.mu.Lock()
			pl.starting--
			for i, c := range pl.launching {
				if c == cn {
					pl.launching = append(pl.launching[:i], pl.launching[i+1:]...)
					break
				}
			}
			if err != nil {
				pl.mu.Unlock()
				slot.Free()
				return
			}
			p := &engineProc{conn: cn, slot: slot}
			if !e.keepLocked(p) {
				pl.mu.Unlock()
				p.end()
				return
			}
			pl.fresh = append(pl.fresh, p)
			pl.mu.Unlock()
		}()
	}
}

// keepLocked says whether p may wait in the pool, and arms its idle
// timeout when it may: not once the pool is closed, nor while a script
// waits for a slot, which p's is then; pl.mu is held.
func (e *Engines) keepLocked(p *engineProc) bool {
	pl := e.pool
	if pl.closed || e.waiting.Load() > 0 {
		return false
	}
	p.kept = true
	p.timer = time.AfterFunc(pl.cfg.Idle, func() { e.expire(p) })
	return true
}

// expire ends p when it is still idle after Pool.Idle.
func (e *Engines) expire(p *engineProc) {
	pl := e.pool
	pl.mu.Lock()
	found := false
	for _, list := range []*[]*engineProc{&pl.fresh, &pl.idle} {
		for i, q := range *list {
			if q == p {
				*list = append((*list)[:i], (*list)[i+1:]...)
				found = true
				break
			}
		}
	}
	pl.mu.Unlock()
	if found {
		p.end()
	}
}

// release takes p back after a script of conv: kept for conv's next
// script when clean (the script hit no limit and the engine said how it
// ended), conv is a conversation, and p has scripts left; else ended.
// It returns what the engine said if it went away on its own.
func (e *Engines) release(p *engineProc, conv string, clean bool) string {
	pl := e.pool
	p.used++
	said := ""
	if pl == nil || !clean || conv == "" || p.used >= pl.cfg.Scripts {
		said = p.end()
		p = nil
	}
	if pl == nil {
		return said
	}
	// The engines started ahead are replaced now, once the script is
	// over: a process starting takes the cores for tens of milliseconds,
	// which a script taking one would wait for too.
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if p != nil && !e.keepLocked(p) {
		defer p.end() // after the lock
		p = nil
	}
	if p != nil {
		p.conv = conv
		pl.idle = append(pl.idle, p)
	}
	e.refillLocked()
	return said
}

// kept is how many engines the pool keeps now, idle or started ahead.
func (e *Engines) kept() int {
	if e.pool == nil {
		return 0
	}
	e.pool.mu.Lock()
	defer e.pool.mu.Unlock()
	return len(e.pool.fresh) + len(e.pool.idle) + e.pool.starting
}

// String says how many engines e allows, runs and keeps: for a test's
// failure message.
func (e *Engines) String() string {
	return fmt.Sprintf("engines: limit %d, running %d, kept %d", e.Limit(), e.Running(), e.kept())
}
