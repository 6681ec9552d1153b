// Package background owns the running background scripts of
// code_execution {background: true}: it starts them (package script runs
// each in its engine process), keeps their journals in the workspace,
// bounds them (how many run per conversation and in the process, how many
// times each may wake
// the agent, how close together, how long each lives), turns wake_agent
// into wakes — the user message of a woken turn, its payload through the
// one conversion — and hands them to a Waker when they are due. It offers
// code_execution--list and code_execution--cancel, and tells a
// conversation once about the scripts a restart took away.
//
// It must not run turns (the Waker's owner does: `myelin chat`, a server's
// turn queue), convert results itself (package result does), nor let a
// script outlive the Manager: Close stops them all.
package background

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// Dir is the workspace directory of the scripts' journals and state.
const Dir = workspace.OwnDir + "/background"

// Limits bound background scripts. Zero fields take the defaults; each
// limit, when hit, is an error that names it.
type Limits struct {
	// Running bounds the scripts running at once in one conversation
	// (DefaultRunning); one more is refused.
	Running int
	// Total bounds the scripts running at once in the process, all
	// conversations together (DefaultTotal); one more is refused. It
	// must be below the engines' limit (script.Config.Engines), so that
	// background scripts, which hold their engines for hours, always
	// leave one to the scripts of calls. Each script also takes an engine
	// there, and is refused when none is free.
	Total int
	// Wakes bounds the wakes of one script (DefaultWakes); one more
	// rejects wake_agent's promise.
	Wakes int
	// Gap is the least time between two wakes of one script (DefaultGap):
	// an early wake is held until then, never dropped.
	Gap time.Duration
	// Lifetime bounds how long a script runs (DefaultLifetime); then it is
	// stopped. A call may ask for less.
	Lifetime time.Duration
}

// Defaults of Limits.
const (
	DefaultRunning  = 3
	DefaultTotal    = 4
	DefaultWakes    = 100
	DefaultGap      = 60 * time.Second
	DefaultLifetime = 24 * time.Hour
)

func (l Limits) withDefaults() Limits {
	if l.Running <= 0 {
		l.Running = DefaultRunning
	}
	if l.Total <= 0 {
		l.Total = DefaultTotal
	}
	if l.Wakes <= 0 {
		l.Wakes = DefaultWakes
	}
	if l.Gap < 0 {
		l.Gap = 0
	} else if l.Gap == 0 {
		l.Gap = DefaultGap
	}
	if l.Lifetime <= 0 {
		l.Lifetime = DefaultLifetime
	}
	return l
}

// NoGap is a Gap that lets wakes come as close as they are made (a
// negative Gap; 0 means DefaultGap).
const NoGap = -1

// Config is what a Manager needs.
type Config struct {
	// Script is how each script runs: its tools, the conversion's
	// environment of its calls, its limits (but Time: the lifetime bounds
	// a background script) and the trace.
	Script script.Config
	// Root is the workspace root: journals and state go under Dir there.
	Root string
	// Env is the conversion of wakes' payloads: the workspace's store,
	// where a payload over its cap spills, and the caps.
	Env result.Env
	// Limits bound the scripts.
	Limits Limits
	// Clock is the Manager's time (RealClock when nil).
	Clock Clock
	// Waker gets each wake when it is due. Required.
	Waker Waker
}

// Manager runs the background scripts of one process. Its methods are
// safe for concurrent use.
type Manager struct {
	c      Config
	lim    Limits
	clock  Clock
	mu     sync.Mutex
	byID   map[string]*bg
	order  []*bg
	gone   []state // scripts a restart took away, not yet told
	wg     sync.WaitGroup
	closed bool
	// starting counts the starts taking their engine (outside mu), by
	// conversation, and startingAll in all: they count toward the limits
	// meanwhile.
	starting    map[string]int
	startingAll int
	// take takes an engine for a script (the pool's TryTake; a test's
	// slower one).
	take func() *script.Slot
}

// bg is one background script; its fields after the first line are under
// the Manager's mu.
type bg struct {
	id, conv, journal string
	started           time.Time
	lifetime          time.Duration
	cancel            context.CancelCauseFunc
	done              chan struct{} // closed once it has ended and ended has run

	status    string // running, ended, failed, cancelled, lifetime, stopped
	why       string // how it ended, for the list
	ended     time.Time
	requested int       // wakes accepted
	lastDue   time.Time // when the last accepted wake was due
	held      map[int]Timer
	dropped   int // wakes held when it was cancelled
}

// Causes of a script's stop, from outside it.
var (
	errCancelled = errors.New("cancelled with " + ToolCancel)
	errLifetime  = errors.New("it reached its lifetime")
	errClosed    = errors.New("myelin stopped")
)

// New returns a Manager for the workspace at c.Root, and reads what
// scripts were running there when a process that ran them stopped: each
// conversation is told of its own once (Gone).
func New(c Config) (*Manager, error) {
	if c.Waker == nil {
		return nil, errors.New("background: a Manager needs a Waker")
	}
	m := &Manager{c: c, lim: c.Limits.withDefaults(), clock: c.Clock, byID: map[string]*bg{}, starting: map[string]int{}, take: c.Script.EnginePool().TryTake}
	if engines := c.Script.EnginePool().Limit(); m.lim.Total >= engines {
		return nil, fmt.Errorf("background: %d background scripts at once in the process (Limits.Total) would leave none of the %d script engines (script.Config.Engines) to the scripts of calls: give fewer than the engines", m.lim.Total, engines)
	}
	if m.clock == nil {
		m.clock = RealClock{}
	}
	gone, err := readGone(c.Root)
	if err != nil {
		return nil, err
	}
	m.gone = gone
	return m, nil
}

// Limits are the Manager's limits, defaults filled in.
func (m *Manager) Limits() Limits { return m.lim }

// Describe is code_execution's line on background scripts.
func (m *Manager) Describe() string {
	return fmt.Sprintf("background: true runs the script on after the turn (watch a build, poll, tail a log): the call returns at once with its id and its journal (%s/<id>.log, where what it prints goes). Inside it, wake_agent(payload) wakes you with a message and a turn, and await sleep(ms) waits. Limits: %d running per conversation (%d in all), %d wakes per script, wakes at least %v apart (an early one is held), a lifetime of %v. A script that dies without waking you wakes you once; a clean end is silent. %s lists them, %s stops one.",
		Dir, m.lim.Running, m.lim.Total, m.lim.Wakes, m.lim.Gap, m.lim.Lifetime, ToolList, ToolCancel)
}

// Start starts code as a background script of the conversation ctx is for
// (tool.ConversationOf: the agent sets it for each call), and returns at once what the model gets: its id,
// its journal and its lifetime; or an error result naming the limit hit.
// The script runs on after ctx ends, until it ends, is cancelled, reaches
// its lifetime, or the Manager closes. While it takes the script's engine
// (which may end an idle one and wait for it) it holds up no other caller
// of the Manager; it counts toward the limits meanwhile.
func (m *Manager) Start(ctx context.Context, code string, lifetime time.Duration) result.Result {
	conv := tool.ConversationOf(ctx)
	if lifetime <= 0 || lifetime > m.lim.Lifetime {
		lifetime = m.lim.Lifetime
	}
	m.mu.Lock()
	if refused := m.refused(conv); refused != "" {
		m.mu.Unlock()
		return result.Error(refused)
	}
	// The engine is taken now, so that the call says at once whether the
	// script runs: it is freed when the script ends. Taking it may end an
	// idle engine and wait for it to be reaped (milliseconds): not under
	// mu, which every turn's start (Gone), wake and list takes. The start
	// counts toward the limits meanwhile.
	m.starting[conv]++
	m.startingAll++
	m.mu.Unlock()
	slot := m.take()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.starting[conv]--; m.starting[conv] == 0 {
		delete(m.starting, conv)
	}
	m.startingAll--
	if m.closed { // meanwhile
		if slot != nil {
			slot.Free()
		}
		return result.Error(errStopping)
	}
	if slot == nil {
		return result.Error("code_execution {background: true}: " + m.c.Script.EnginePool().Busy())
	}
	s := &bg{id: newID(), conv: conv, started: m.clock.Now(), lifetime: lifetime, status: "running", held: map[int]Timer{}}
	s.journal = path.Join(Dir, s.id+".log")
	f, err := workspace.OpenOwn(m.c.Root, s.journal, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		slot.Free()
		return result.Error(fmt.Sprintf("code_execution {background: true}: opening the script's journal %s: %v", s.journal, err))
	}
	journal := &journalFile{f: f}
	if err := writeState(m.c.Root, s.state(os.Getpid())); err != nil {
		f.Close()
		slot.Free()
		return result.Error(fmt.Sprintf("code_execution {background: true}: %v", err))
	}
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s.cancel = cancel
	m.byID[s.id] = s
	m.order = append(m.order, s)
	// The clock's lifetime stops the script; the engine's own time limit,
	// a minute later on the system's clock, is only a backstop.
	life := m.clock.AfterFunc(lifetime, func() { cancel(errLifetime) })
	limits := m.c.Script.Limits
	limits.Time = lifetime + time.Minute
	m.wg.Add(1)
	s.done = make(chan struct{})
	go func() {
		defer m.wg.Done()
		defer close(s.done)
		defer f.Close()
		res := script.RunBackground(sctx, m.c.Script, limits, code, script.Hooks{
			ID: s.id, Journal: journal, Slot: slot,
			Wake:  func(line int, payload result.Result) (string, error) { return m.wake(s, line, payload) },
			Sleep: m.sleep,
		})
		life.Stop()
		m.ended(s, context.Cause(sctx), res, journal)
	}()
	ends := s.started.Add(lifetime)
	text := fmt.Sprintf("started background script %s. What it prints goes to its journal %s (read it with workspace--read). It runs until it ends, is stopped with %s {\"id\":%q}, or reaches its lifetime of %v (at %s). wake_agent(payload) in it wakes you: at most %d times, at least %v apart.",
		s.id, s.journal, ToolCancel, s.id, lifetime, ends.UTC().Format("2006-01-02 15:04:05 UTC"), m.lim.Wakes, m.lim.Gap)
	structured := mustJSON(map[string]any{"id": s.id, "journal": s.journal, "lifetimeMs": lifetime.Milliseconds(), "ends": ends.UTC().Format(time.RFC3339)})
	return result.Result{Data: text, Structured: structured}
}

// errStopping is what a start is told once the Manager is closed.
const errStopping = "code_execution {background: true}: myelin is stopping; no script can start"

// refused is why a script of conv cannot start now — the Manager is
// closed, or a limit is reached, counting the starts taking their engine
// — or "" when it can; m.mu is held.
func (m *Manager) refused(conv string) string {
	if m.closed {
		return errStopping
	}
	running, verb := m.runningIn(conv), "running"
	if m.starting[conv] > 0 {
		verb = "running or starting"
	}
	if n := len(running) + m.starting[conv]; n >= m.lim.Running {
		return fmt.Sprintf("code_execution {background: true}: %d background scripts are %s in this conversation, the limit (%v); stop one with %s or wait for one to end", n, verb, running, ToolCancel)
	}
	verb = "running"
	if m.startingAll > 0 {
		verb = "running or starting"
	}
	if n := m.running() + m.startingAll; n >= m.lim.Total {
		return fmt.Sprintf("code_execution {background: true}: %d background scripts are %s in this process (all conversations together), its limit (myelin's --background-scripts-total raises it); stop one of this conversation's with %s, or wait for one to end", n, verb, ToolCancel)
	}
	return ""
}

// runningIn are the ids of conv's running scripts; m.mu is held.
func (m *Manager) runningIn(conv string) []string {
	var ids []string
	for _, s := range m.order {
		if s.conv == conv && s.status == "running" {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// sleep is a script's sleep(ms), on the Manager's clock.
func (m *Manager) sleep(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	t := m.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// wake is a script's wake_agent: it converts the payload now (a spill is
// written at once), and hands the wake to the Waker when it is due.
func (m *Manager) wake(s *bg, line int, payload result.Result) (string, error) {
	m.mu.Lock()
	if s.status != "running" {
		m.mu.Unlock()
		return "", fmt.Errorf("wake_agent: the script is %s", s.status)
	}
	if s.requested >= m.lim.Wakes {
		m.mu.Unlock()
		return "", fmt.Errorf("wake_agent: this script has woken the agent %d times, its limit of wakes; this wake was not made", m.lim.Wakes)
	}
	s.requested++
	n := s.requested
	now := m.clock.Now()
	due := now
	if n > 1 && due.Before(s.lastDue.Add(m.lim.Gap)) {
		due = s.lastDue.Add(m.lim.Gap)
	}
	s.lastDue = due
	m.mu.Unlock()

	out := result.One(result.Call{ID: fmt.Sprintf("%s-wake-%d", s.id, n), Result: payload}, m.c.Env)
	w := Wake{Conversation: s.conv, Script: s.id, N: n, Of: m.lim.Wakes, Line: line, Since: now.Sub(s.started),
		Held: due.Sub(now), Journal: s.journal, SpillPath: out.SpillPath}
	w.Message = w.header() + "\n" + out.Text
	if w.Held <= 0 {
		m.c.Waker.Wake(w)
		return fmt.Sprintf("wake %d of %d: the agent is woken", n, m.lim.Wakes), nil
	}
	m.mu.Lock()
	s.held[n] = m.clock.AfterFunc(w.Held, func() {
		m.mu.Lock()
		_, still := s.held[n]
		delete(s.held, n)
		m.mu.Unlock()
		if still {
			m.c.Waker.Wake(w)
		}
	})
	m.mu.Unlock()
	return fmt.Sprintf("wake %d of %d: held %v, to keep wakes %v apart; the agent is woken then", n, m.lim.Wakes, w.Held, m.lim.Gap), nil
}

// ended records how a script ended, in its state and its journal, and
// wakes the agent once when it died without waking it.
func (m *Manager) ended(s *bg, cause error, res result.Result, journal *journalFile) {
	now := m.clock.Now()
	m.mu.Lock()
	s.ended = now
	died := false
	switch {
	case errors.Is(cause, errCancelled):
		s.status, s.why = "cancelled", "stopped with "+ToolCancel
	case errors.Is(cause, errClosed):
		s.status, s.why = "stopped", "myelin stopped"
	case errors.Is(cause, errLifetime):
		s.status, s.why = "lifetime", fmt.Sprintf("stopped at its lifetime of %v", s.lifetime)
		died = s.requested == 0
	case res.IsError:
		s.status, s.why = "failed", firstLine(res)
		died = s.requested == 0
	default:
		s.status, s.why = "ended", "it ended"
	}
	status, why, pid := s.status, s.why, os.Getpid()
	if status == "stopped" {
		pid = 0 // gone: the next process tells its conversation
	}
	st := s.state(pid)
	m.mu.Unlock()
	if journal.last != '\n' && journal.last != 0 {
		io.WriteString(journal, "\n")
	}
	fmt.Fprintf(journal, "[myelin %s: the script %s: %s]\n", now.UTC().Format(time.RFC3339), status, why)
	_ = writeState(m.c.Root, st) // a state that cannot be written leaves "running": told as gone later
	if !died {
		return
	}
	body := res
	if status == "lifetime" {
		body = result.Result{Data: why + ".\nThe end of what it printed (the whole is in its journal):\n" + tailOf(res), IsError: true}
	}
	out := result.One(result.Call{ID: s.id + "-died", Result: body}, m.c.Env)
	w := Wake{Conversation: s.conv, Script: s.id, Since: now.Sub(s.started), Died: true, Journal: s.journal, SpillPath: out.SpillPath}
	w.Message = w.header() + "\n" + out.Text
	m.c.Waker.Wake(w)
}

// journalFile is a script's journal, which knows its last byte: myelin's
// own line at the end starts a line of its own.
type journalFile struct {
	f    *os.File
	last byte
}

func (j *journalFile) Write(p []byte) (int, error) {
	if len(p) > 0 {
		j.last = p[len(p)-1]
	}
	return j.f.Write(p)
}

// firstLine is the first line of a result's text, for the list.
func firstLine(r result.Result) string {
	s, _ := r.Data.(string)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// tailOf is the end of what a script printed, from its result's
// structured content.
func tailOf(r result.Result) string {
	var v struct {
		Output string `json:"output"`
	}
	raw, _ := r.Structured.(json.RawMessage)
	_ = json.Unmarshal(raw, &v)
	return v.Output
}

// Cancel stops conv's script id; its held wakes are dropped, and the
// returned Info says how many.
func (m *Manager) Cancel(conv, id string) (Info, error) {
	m.mu.Lock()
	s, ok := m.byID[id]
	if !ok || s.conv != conv {
		running := m.runningIn(conv)
		m.mu.Unlock()
		return Info{}, fmt.Errorf("%s: there is no background script %q in this conversation (running: %v)", ToolCancel, id, running)
	}
	if s.status != "running" {
		info := m.info(s)
		m.mu.Unlock()
		return info, fmt.Errorf("%s: background script %s is not running: %s (%s)", ToolCancel, id, s.status, s.why)
	}
	for n, t := range s.held {
		t.Stop()
		delete(s.held, n)
		s.dropped++
	}
	m.mu.Unlock()
	s.cancel(errCancelled)
	<-s.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info(s), nil
}

// Close stops every running script and waits for them; their state says
// they were running, so that the next process tells their conversations.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for _, s := range m.order {
		for n, t := range s.held {
			t.Stop()
			delete(s.held, n)
		}
		if s.status == "running" {
			s.cancel(errClosed)
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// Running is how many scripts run now, in all conversations.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running()
}

// running is Running; m.mu is held.
func (m *Manager) running() int {
	n := 0
	for _, s := range m.order {
		if s.status == "running" {
			n++
		}
	}
	return n
}

// Info is a script as code_execution--list shows it.
type Info struct {
	ID       string `json:"id" jsonschema:"the script's id (bg_...)"`
	Status   string `json:"status" jsonschema:"running, ended, failed, cancelled, lifetime or stopped"`
	Why      string `json:"why,omitempty" jsonschema:"why it ended, once it has"`
	Started  string `json:"started" jsonschema:"when it started (RFC 3339, UTC)"`
	Ended    string `json:"ended,omitempty" jsonschema:"when it ended (RFC 3339, UTC)"`
	Wakes    int    `json:"wakes" jsonschema:"the times it woke the conversation"`
	Held     int    `json:"held" jsonschema:"wakes it made that are held to keep the gap"`
	Dropped  int    `json:"dropped,omitempty" jsonschema:"wakes it made that were dropped when it was stopped"`
	Lifetime string `json:"lifetime" jsonschema:"how long it may run"`
	Journal  string `json:"journal" jsonschema:"the workspace file its output goes to"`
}

// info is s's Info; m.mu is held.
func (m *Manager) info(s *bg) Info {
	i := Info{ID: s.id, Status: s.status, Why: s.why, Started: s.started.UTC().Format(time.RFC3339), Wakes: s.requested - len(s.held) - s.dropped,
		Held: len(s.held), Dropped: s.dropped, Lifetime: s.lifetime.String(), Journal: s.journal}
	if !s.ended.IsZero() {
		i.Ended = s.ended.UTC().Format(time.RFC3339)
	}
	return i
}

// List is conv's scripts of this process, oldest first.
func (m *Manager) List(conv string) []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Info
	for _, s := range m.order {
		if s.conv == conv {
			out = append(out, m.info(s))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started < out[j].Started })
	return out
}

func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bg_" + hex.EncodeToString(b)
}
