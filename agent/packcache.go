package agent

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/myelin-run/myelin/history"
)

// This file is what a running process keeps of the packs it read or made
// (pack.go): a process reads a conversation from its mark at every
// request, and the pack's messages, once unpacked (or packed by it), are
// kept with the messages read after them, so that no request unpacks
// them again nor copies the view to add the new ones.

// maxPacks bounds the packs an agent keeps unpacked (packs): the one used
// longest ago goes first. One holds about its conversation's view.
const maxPacks = 8

// packs are the packs an agent and its clones keep unpacked, by
// conversation, for one store: an agent whose Store is another (a clone
// given one, or an agent given a new one) keeps packs of its own from
// then on (a mark's pack id says nothing of the messages another store
// holds after it). Its zero value is ready to use.
type packs struct {
	mu    sync.Mutex
	store history.Store
	tick  uint64
	m     map[string]*unpacked
}

// unpacked is one conversation's pack, unpacked: msgs are the stored
// messages from place at on, the pack's (to from, the mark's From) and
// those read after it. Places past those a read was handed are written
// only under the lock, and every slice handed out has its length as
// capacity, so that no holder sees them change.
type unpacked struct {
	id       packID
	at, from int
	msgs     []history.Message
	used     uint64
}

// packsOf is a's packs, shared with its clones (Clone).
func (a *Agent) packsOf() *packs {
	if p := a.packs.Load(); p != nil {
		return p
	}
	a.packs.CompareAndSwap(nil, &packs{})
	return a.packs.Load()
}

// packsRef is an Agent's packs, made at first use.
type packsRef = atomic.Pointer[packs]

// unpack is the stored messages of conversation id from m.at on, given
// m.pack, which holds those before from (the mark's From), and tail, the
// messages from from on, as the store just read them: the pack's kept
// from an earlier request when it is the one kept, else unpacked now and
// kept. The messages after from are always tail's: those kept from an
// earlier read are used only where they are the same messages (the
// store's own, unchanged), so that a store that lost messages since (a
// restored file, a failed-over database) is read as it is now.
func (a *Agent) unpack(id string, m packedMark, from int, tail []history.Message) ([]history.Message, error) {
	held, need := from-m.at, from+len(tail)-m.at
	p := a.packsOf()
	keyed := comparable(a.Store)
	if keyed {
		p.mu.Lock()
		if u := p.hit(a.Store, id, m.id, m.at, from); u != nil {
			out := u.extend(held, tail)
			p.mu.Unlock()
			return out, nil
		}
		p.mu.Unlock()
	}
	// unpacked with the room joined gives (the tail, and a quarter more
	// for the next reads): the tail is appended in place, not the whole
	// list copied to append it
	msgs, err := history.UnpackWithRoom(m.pack, len(tail)+need/4)
	if err != nil {
		return nil, err
	}
	if len(msgs) != held {
		return nil, fmt.Errorf("the pack holds %d messages where its mark says %d (places %d to %d)", len(msgs), held, m.at, from)
	}
	all := append(msgs, tail...)
	if keyed {
		a.keepPack(id, m.id, m.at, from, all)
	}
	return all[:need:need], nil
}

// hit is the unpacked pack pid of conversation id's mark at from, whose
// pack starts at at, kept for store s, marked as used now; nil when none
// is kept. p's lock is held.
func (p *packs) hit(s history.Store, id string, pid packID, at, from int) *unpacked {
	u := p.m[id]
	if p.store != s || u == nil || u.id != pid || u.at != at || u.from != from || len(u.msgs) < from-at {
		return nil
	}
	p.tick++
	u.used = p.tick
	return u
}

// extend is u's messages to the end of tail, the stored messages from
// u.from on as just read (held: how many of u's are the pack's), with
// its length as capacity. The kept messages after the pack are checked
// against tail's; where one differs, they are let go and tail's taken.
// The caller holds the lock.
func (u *unpacked) extend(held int, tail []history.Message) []history.Message {
	need := held + len(tail)
	for i := held; i < min(len(u.msgs), need); i++ {
		if !sameMessage(&u.msgs[i], &tail[i-held]) {
			// another message at a place read before: take the store's,
			// in a list of its own (earlier holders keep theirs)
			u.msgs = joined(u.msgs[:held], tail)
			return u.msgs[:need:need]
		}
	}
	if n := len(u.msgs); n < need {
		u.msgs = append(u.msgs, tail[n-held:]...)
	}
	return u.msgs[:need:need]
}

// joined is head then tail in a list of their own, with room for a
// quarter more, which the next reads append into (extend).
func joined(head, tail []history.Message) []history.Message {
	n := len(head) + len(tail)
	return append(append(make([]history.Message, 0, n+n/4), head...), tail...)
}

// sameMessage reports whether a and b are the same stored message: the
// same role, time and flags, and the same Parts, Usage, Edit and Settings
// — the same values in memory, as a store hands out again the messages it
// keeps. It is not a comparison of contents: two reads that decoded a
// message twice differ, and the caller then takes the later one.
func sameMessage(a, b *history.Message) bool {
	return a.Role == b.Role && a.Time.Equal(b.Time) && a.Cut == b.Cut && a.Usage == b.Usage && a.Edit == b.Edit &&
		a.Settings == b.Settings && len(a.Parts) == len(b.Parts) && (len(a.Parts) == 0 || &a.Parts[0] == &b.Parts[0])
}

// keepPack keeps msgs, the stored messages of conversation id from place
// at on, as the unpacked pack pid of the mark at from, for a.Store: an
// agent whose packs were kept for another store is given new ones, and
// the others are left to the agents that share them. The room msgs has
// past its length is the cache's to append the next reads' messages into
// (extend): a caller that shares it with anyone clips it first.
func (a *Agent) keepPack(id string, pid packID, at, from int, msgs []history.Message) {
	if !comparable(a.Store) {
		return // no way to tell later whether it is the same store
	}
	p := a.packsOf()
	p.mu.Lock()
	if p.store != nil && p.store != a.Store {
		// kept for another store — by the agent this one was cloned
		// from, which keeps them: this one gets packs of its own
		p.mu.Unlock()
		a.packs.CompareAndSwap(p, &packs{})
		p = a.packsOf()
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	if p.m == nil || p.store != a.Store {
		p.store, p.m = a.Store, map[string]*unpacked{}
	}
	if _, ok := p.m[id]; !ok && len(p.m) >= maxPacks {
		var oldest string
		var least uint64
		for k, u := range p.m {
			if oldest == "" || u.used < least {
				oldest, least = k, u.used
			}
		}
		delete(p.m, oldest)
	}
	p.tick++
	p.m[id] = &unpacked{id: pid, at: at, from: from, msgs: msgs, used: p.tick}
}

// forget drops conversation id's unpacked pack: the conversation was
// deleted.
func (p *packs) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, id)
}
