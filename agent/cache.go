package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// maxRecords bounds the conversation records an agent keeps (records):
// past it they are all dropped and read again as needed.
const maxRecords = 256

// cache is what an agent keeps between requests because it does not change
// between them: the tool definitions, encoded once per change of the
// registry (tool.Registry.Version), and the records of the conversations it
// has served, which never change once created (a Store has no way to change
// a record), so that building a request does not read the record again —
// on SQLite a read that also counts the conversation's messages. A record
// is read again once at each turn's start (recheckRecord): a conversation
// deleted and made again under its id by another process is another
// record. It must
// not keep anything a Store can change: messages are always read from the
// Store.
type cache struct {
	mu sync.Mutex

	reg     *tool.Registry
	version uint64
	filled  bool            // defs are of reg at version
	defs    []provider.Tool // shared: never changed once made; nil for no tools
	digest  string          // of defs (settings)

	store   history.Store // the store records came from
	records map[string]history.Conversation

	window known // window.For of the agent's Model and ContextWindow
}

// known is what window.For gives for a model and an override, kept
// while they stay the same: it is looked for in every
// request's sizing, and the lookup matches the model's name against the
// table with regular expressions.
type known struct {
	filled   bool
	model    string
	override int
	w        window.Window
	err      error
}

// toolDefs are the tool definitions, encoded when the registry has changed
// since they last were, with their digest. The slice is shared: it must
// not be changed.
func (a *Agent) toolDefs() ([]provider.Tool, string, error) {
	defs, digest, version, ok := a.keptDefs()
	if ok {
		return defs, digest, nil
	}
	defs, err := encodeDefs(a.Tools.Tools())
	if err != nil {
		return nil, "", err
	}
	digest = toolsDigest(defs)
	c := &a.cache
	c.mu.Lock()
	c.reg, c.version, c.defs, c.digest, c.filled = a.Tools, version, defs, digest, true
	c.mu.Unlock()
	return defs, digest, nil
}

// keptDefs is the tool definitions kept for the registry as it is now,
// with their digest, and the registry's version; ok is false when none
// are kept for it.
func (a *Agent) keptDefs() (defs []provider.Tool, digest string, version uint64, ok bool) {
	c := &a.cache
	version = a.Tools.Version()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reg == a.Tools && c.version == version && c.filled {
		return c.defs, c.digest, version, true
	}
	return nil, "", version, false
}

// toolDefsAhead encodes the tool definitions on a goroutine of their own
// when they are not kept for the registry as it is, and returns what
// waits for that goroutine to end (at once when none was started; any
// number of times). A process's first turn encodes them (some 1 ms:
// encoding/json's first look at the schemas' types) while the turn
// reads its conversation (begin), instead of after; its sizing then
// finds them kept.
func (a *Agent) toolDefsAhead() (wait func()) {
	if _, _, _, kept := a.keptDefs(); kept {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.toolDefs() // an error is the sizing's to say: it encodes them again
	}()
	return func() { <-done }
}

// known is window.For(a.Model, a.ContextWindow), found again only when
// either has changed since it last was.
func (a *Agent) known() (window.Window, error) {
	c := &a.cache
	model, override := a.Model, a.ContextWindow
	c.mu.Lock()
	k := c.window
	c.mu.Unlock()
	if k.filled && k.model == model && k.override == override {
		return k.w, k.err
	}
	w, err := window.For(model, override)
	c.mu.Lock()
	c.window = known{filled: true, model: model, override: override, w: w, err: err}
	c.mu.Unlock()
	return w, err
}

// encodeDefs encodes tools' definitions; nil for no tools.
func encodeDefs(tools []*tool.Tool) ([]provider.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	defs := make([]provider.Tool, 0, len(tools))
	for _, t := range tools {
		schema := json.RawMessage(`{"type":"object"}`)
		if t.InputSchema != nil {
			raw, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s: encoding its input schema: %w", t.Name, err)
			}
			schema = raw
		}
		defs = append(defs, provider.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return defs, nil
}

// record is conversation id's record — its id, system prompt, creation
// time, parent and base, which never change (a base only for another
// holding the same messages); not its count of messages nor its
// update time — kept when the agent has read or created it in the same
// Store before, else read from the Store (and kept for next time).
func (a *Agent) record(ctx context.Context, id string) (history.Conversation, error) {
	c := &a.cache
	keyed := comparable(a.Store)
	if keyed {
		c.mu.Lock()
		conv, ok := c.records[id]
		if ok && c.store != a.Store {
			ok = false
		}
		c.mu.Unlock()
		if ok {
			return conv, nil
		}
	}
	conv, err := history.ReadRecord(ctx, a.Store, id) // not Get: its count of messages is a walk of them all
	if err != nil {
		return conv, err
	}
	a.keepRecord(conv)
	return conv, nil
}

// keepRecord keeps conv, a record just read from or created in a.Store.
func (a *Agent) keepRecord(conv history.Conversation) {
	if !comparable(a.Store) {
		return // no way to tell later whether it is the same store
	}
	c := &a.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != a.Store || len(c.records) >= maxRecords {
		c.records = nil
	}
	if c.records == nil {
		c.store, c.records = a.Store, map[string]history.Conversation{}
	}
	// what never changes: not the count of messages, nor the update time.
	// Base is kept for the cache key (cacheKey): a rewind of the base may
	// point it at a branch of the same conversation, whose chain ends at
	// the same root.
	c.records[conv.ID] = history.Conversation{ID: conv.ID, System: conv.System, Created: conv.Created, Parent: conv.Parent, ParentCall: conv.ParentCall,
		Base: conv.Base, BaseAt: conv.BaseAt, BranchOf: conv.BranchOf}
}

// recheckRecord forgets the record kept of conversation id, not its
// unpacked pack (checked against the store's mark when used): a turn
// takes it again from the store once, at its start (claim), so that a
// long-running agent serves a conversation that another process deleted
// and made again under its id between two turns — another system prompt,
// another base — as it is now, not as it was kept. Within a turn it
// cannot change: the claim is the conversation's, and goes with it.
func (a *Agent) recheckRecord(id string) {
	c := &a.cache
	c.mu.Lock()
	delete(c.records, id)
	c.mu.Unlock()
}

// forgetRecord forgets the record of conversation id, deleted from
// a.Store, and its unpacked pack: made again, it may differ.
func (a *Agent) forgetRecord(id string) {
	c := &a.cache
	c.mu.Lock()
	delete(c.records, id)
	c.mu.Unlock()
	a.packsOf().forget(id)
}

// comparable reports whether s is a pointer, which == tells apart from
// another store without a panic (a struct value may hold an interface
// whose value == cannot compare).
func comparable(s history.Store) bool {
	t := reflect.TypeOf(s)
	return t != nil && t.Kind() == reflect.Pointer
}
