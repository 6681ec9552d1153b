package prefix

import (
	"bytes"
	"sync"
	"unsafe"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
)

// Consecutive requests of a conversation share almost all their messages:
// a round adds an answer and its results. Encoding all of them again costs
// time in the length of the conversation on every request (about 80 ms at
// 100,000 messages on the Anthropic wire), and most of a light round's body
// on every wire. Cache lets a wire keep, per conversation
// (Request.CacheKey), the encoded bytes of a request body's start — what
// precedes its messages and its first messages — with what each of those
// messages was: its role and its Parts. Get checks every kept message
// against the request's own before it hands the bytes out: stored messages
// never change (contract §7), so Parts at the same address and of the same
// length are the same; other Parts (a view's cleared results and summary,
// built anew for each request) are compared field by field. A wire encodes
// the request whole on any difference, and a test of each wire holds the
// bytes it sends to those its whole encoding gives. A wire whose
// messages' bytes stand whatever follows them (the Responses wire) also
// keeps where each message's bytes end, and takes as many of the kept
// messages as still hold (GetPartial), so that an edit in the middle of a
// conversation reuses what precedes it.

// MaxConversations is how many conversations a Cache keeps the encoded
// start of; the one used longest ago goes first. A prefix holds about the
// size of the conversation's request body.
const MaxConversations = 8

// msgKey is what a kept message was: its role (a record's is
// history.Context) and its Parts, and where its bytes end in the prefix
// when the wire said (Put's ends). Holding the Parts keeps them alive, so
// no other message's Parts can come to have their address.
type msgKey struct {
	role  history.Role
	parts []history.Part
	end   int
}

// same reports whether m is the message k was made from: the same role,
// and the same Parts (stored Parts never change, contract §7), or Parts
// equal in every field. A view with edits builds new Parts for a cleared
// message and a new summary message on every request; their contents are
// compared, which is cheap (a placeholder is short, a summary's text the
// same string).
func (k msgKey) same(m history.Message) bool {
	return k.role == m.Role && SameParts(k.parts, m.Parts)
}

// SameParts reports whether the Parts b encode as a do on every wire: the
// same Parts — a stored message's never change (contract §7), so a slice
// at the same address and of the same length holds the same — or Parts
// equal in every field. It is for deciding whether encoded bytes can be
// sent again (Cache, and the Responses wire's own kept bodies), nothing
// else.
func SameParts(a, b []history.Part) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return true
	}
	for i := range a {
		if !samePart(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// samePart reports whether a and b are equal in every field, so that any
// wire's encoding of them is the same.
func samePart(a, b *history.Part) bool {
	if a.Type != b.Type || a.Text != b.Text || a.CallID != b.CallID || a.Name != b.Name ||
		a.IsError != b.IsError || a.SpillPath != b.SpillPath || a.Wire != b.Wire || a.Signature != b.Signature ||
		!bytes.Equal(a.Input, b.Input) || (a.Input == nil) != (b.Input == nil) ||
		!bytes.Equal(a.Raw, b.Raw) || (a.Raw == nil) != (b.Raw == nil) || len(a.Images) != len(b.Images) {
		return false
	}
	for i := range a.Images {
		if a.Images[i].MIMEType != b.Images[i].MIMEType || !bytes.Equal(a.Images[i].Data, b.Images[i].Data) {
			return false
		}
	}
	return true
}

// A Prefix is the encoded start of a conversation's request body: what
// precedes its messages (the lead it was kept with) and its first
// messages, as a wire encoded them. It is never written to once kept.
type Prefix struct {
	lead  string
	keys  []msgKey // one per message the bytes were made of, records and empty ones included
	bytes []byte
	last  history.Role
	// ends: every key's end is where its message's bytes end, so the
	// prefix can be cut after any of them (GetPartial)
	ends bool
}

// Len is how many of the request's messages the prefix was made of: a
// wire encodes the messages from there on.
func (p *Prefix) Len() int { return len(p.keys) }

// Bytes is the encoded start, to copy into the next body. The caller must
// not write to it.
func (p *Prefix) Bytes() []byte { return p.bytes }

// Last is the role the wire kept with the prefix: the role of the last
// message group it holds, for a wire that joins neighbouring messages of
// one role.
func (p *Prefix) Last() history.Role { return p.last }

// matches reports whether p was kept after lead and msgs starts with the
// messages p was made of.
func (p *Prefix) matches(lead string, msgs []history.Message) bool {
	return p.lead == lead && len(msgs) >= len(p.keys) && p.holding(msgs) == len(p.keys)
}

// holding is how many of msgs' first messages are those p was made of.
func (p *Prefix) holding(msgs []history.Message) int {
	n := min(len(p.keys), len(msgs))
	for i, k := range p.keys[:n] {
		if !k.same(msgs[i]) {
			return i
		}
	}
	return n
}

// Cache is a wire's kept prefixes, one per conversation, the last kept
// for each. Its zero value is ready to use and it is safe for concurrent
// use; a nil *Cache keeps nothing. It never hands out a prefix for
// messages or a lead it was not made of.
type Cache struct {
	mu   sync.Mutex
	tick uint64
	m    map[string]*keptPrefix
}

type keptPrefix struct {
	p    *Prefix
	used uint64
	// spare is the whole body p was cut from, given back by Release once
	// nothing reads it any more: the next body of the conversation is
	// written into it after p's bytes (Buffer), so that p's bytes are
	// neither copied nor read to build it.
	spare []byte
}

// Get is the prefix kept for the conversation conv when it was kept after
// lead (what the wire encodes before the messages, compared whole) and
// msgs starts with the messages it was made of; else nil.
func (c *Cache) Get(conv, lead string, msgs []history.Message) *Prefix {
	p := c.used(conv)
	if p == nil || !p.matches(lead, msgs) {
		return nil
	}
	return p
}

// used is the prefix kept for conv, unchecked, marked as used now; nil
// when there is none.
func (c *Cache) used(conv string) *Prefix {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[conv]
	if e == nil {
		return nil
	}
	c.tick++
	e.used = c.tick
	return e.p
}

// GetPartial is the prefix kept for the conversation conv, cut after as
// many of msgs' first messages as are those it was made of, when it was
// kept after lead; nil when it was not, or when not even msgs' first
// message holds. It is the kept prefix itself when every kept message
// holds (so that Put grows it and Buffer reuses its body's memory), else
// a new Prefix of the bytes up to the end of the last message that
// holds. It is for a wire whose messages' bytes stand whatever follows
// them: a prefix kept without ends (Put) is never cut.
func (c *Cache) GetPartial(conv, lead string, msgs []history.Message) *Prefix {
	p := c.used(conv)
	if p == nil || p.lead != lead {
		return nil
	}
	n := p.holding(msgs)
	switch {
	case n == len(p.keys):
		return p
	case n == 0 || !p.ends:
		return nil
	}
	end := p.keys[n-1].end
	return &Prefix{lead: p.lead, keys: p.keys[:n:n], bytes: p.bytes[:end:end], ends: true}
}

// Put keeps for conv the prefix made of from's messages (from is the
// prefix the body was built on, or nil) followed by msgs, encoded as b,
// after lead, its last group of role last. b must hold from's bytes
// first and is never written to afterwards, by the caller or anyone: Put
// keeps it as it is (a caller passes body[:cut:cut]). ends, for a wire
// that cuts prefixes (GetPartial), is where each of msgs' bytes end in
// b, one per message; a wire that does not gives none.
func (c *Cache) Put(conv, lead string, from *Prefix, msgs []history.Message, b []byte, last history.Role, ends ...int) {
	if c == nil {
		return
	}
	withEnds := len(ends) == len(msgs) && (from == nil || from.ends)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*keptPrefix{}
	}
	var keys []msgKey
	e := c.m[conv]
	if from != nil && e != nil && e.p == from {
		// from's successor: its keys grow in place (readers of from
		// look only at its first len(from.keys)).
		keys = from.keys
	} else if from != nil {
		keys = append(make([]msgKey, 0, len(from.keys)+len(msgs)), from.keys...)
	}
	if cap(keys)-len(keys) < len(msgs) {
		// 40 bytes a message: a first body of 100k messages makes 5 MB of
		// them, in huge pages at a run's start (internal/hugepage)
		grown := hugepage.Make[msgKey](len(keys), len(keys)+len(msgs)+(len(keys)+len(msgs))/4+64)
		copy(grown, keys)
		keys = grown
	}
	for i, m := range msgs {
		k := msgKey{role: m.Role, parts: m.Parts}
		if withEnds {
			k.end = ends[i]
		}
		keys = append(keys, k)
	}
	// keys' spare capacity is for the prefix that follows p; p's readers
	// look only at its length.
	p := &Prefix{lead: lead, keys: keys, bytes: b[:len(b):len(b)], last: last, ends: withEnds}
	c.tick++
	if e != nil {
		e.p, e.used, e.spare = p, c.tick, nil
		return
	}
	if len(c.m) >= MaxConversations {
		first, oldest := true, ""
		var at uint64
		for k, v := range c.m {
			if first || v.used < at {
				first, oldest, at = false, k, v.used
			}
		}
		delete(c.m, oldest)
	}
	c.m[conv] = &keptPrefix{p: p, used: c.tick}
}

// Buffer is where a wire writes conv's next body, built on p (which Get
// or GetPartial gave for it): a slice holding p's bytes, with room for
// size bytes in all. When the body p was cut from was given back (Release) and p is
// still conv's last kept prefix, it is that body's memory, taken (no
// other caller gets it), p's bytes in place and the rest of it written
// over; otherwise it is new memory, p's bytes copied in, with room to
// grow by half again so that the conversation's next bodies fit it once
// it is given back. The caller writes only after p's bytes.
func (c *Cache) Buffer(conv string, p *Prefix, size int) []byte {
	n := len(p.bytes)
	if c != nil {
		c.mu.Lock()
		var spare []byte
		if e := c.m[conv]; e != nil && e.p == p && cap(e.spare) >= size {
			spare, e.spare = e.spare, nil
		}
		c.mu.Unlock()
		if spare != nil {
			return spare[:n]
		}
	}
	buf := make([]byte, n, max(size, n)+size/2)
	copy(buf, p.bytes)
	return buf
}

// Release gives back body, a body built on a Buffer of conv or holding
// the bytes a Put kept for conv, once the wire is done with it: the
// request it was sent in is answered and net/http has written every
// attempt of it (send.Writes). Anyone the wire showed it to
// (Request.OnBody) reads it no later than the conversation's next
// request, whose body may be written into it. Only a body whose start is
// conv's last kept prefix is taken; any other is let go. The caller must
// not write body afterwards.
func (c *Cache) Release(conv string, body []byte) {
	if c == nil || len(body) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[conv]; e != nil && len(e.p.bytes) > 0 && len(body) >= len(e.p.bytes) &&
		unsafe.SliceData(e.p.bytes) == unsafe.SliceData(body) {
		e.spare = body
	}
}

// Kept is the prefix kept for conv, unchecked, or nil: for tests and
// diagnostics, never to build a body from (Get checks it).
func (c *Cache) Kept(conv string) *Prefix {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[conv]; e != nil {
		return e.p
	}
	return nil
}

// Conversations is how many conversations c keeps a prefix for.
func (c *Cache) Conversations() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
