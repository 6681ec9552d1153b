package anthropic

import (
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// Consecutive requests of a conversation share almost all their messages:
// a round adds an answer and its results, and the rolling cache
// breakpoints move to the two newest user messages. Encoding all of them
// again took about 80 ms a request at 100,000 messages. A Provider keeps,
// per conversation (provider.Request.CacheKey), the encoded bytes of the
// message groups before the first group that carries a rolling breakpoint
// (prefixCache), with what each of those messages was: its role and its
// Parts. Each request checks every kept message against its own before it
// reuses the bytes: stored messages never change (contract §7), so Parts
// at the same address and of the same length are the same; other Parts
// (a view's cleared results and summary, built anew for each request) are
// compared field by field. On any difference the request is encoded whole. The bytes sent are
// always those BodyWith gives (TestCachedBodiesAreBodyWithsBytes).

// maxPrefixes is how many conversations a Provider keeps the encoded
// messages of; the one used longest ago goes first. A prefix holds about
// the size of the conversation's request body.
const maxPrefixes = 8

// msgKey is what a kept message was: its role (a record's is
// history.Context) and its Parts. Holding the Parts keeps them alive, so
// no other message's Parts can come to have their address.
type msgKey struct {
	role  history.Role
	parts []history.Part
}

func keyOf(m history.Message) msgKey { return msgKey{role: m.Role, parts: m.Parts} }

// same reports whether m encodes as the message k was made from: the same
// role, and the same Parts (stored Parts never change, contract §7), or
// Parts whose encoded fields are equal (provider.SameParts).
func (k msgKey) same(m history.Message) bool {
	return k.role == m.Role && provider.SameParts(k.parts, m.Parts)
}

// prefix is the start of a conversation's request body: `{"messages":[`
// and its first message groups, encoded. It is never written to once
// stored, except the spare capacity of keys beyond its length (by
// prefixCache.put, under its lock, for the one prefix that follows it).
type prefix struct {
	keys     []msgKey     // one per message the groups were made of, records and empty ones included
	bytes    []byte       // `{"messages":[` and the groups, comma-separated, no trailing comma
	lastRole history.Role // the role of the last group kept
}

// prefixCache is a Provider's prefixes, per conversation. It is safe for
// concurrent use; a nil *prefixCache keeps nothing. It must never hand out
// a prefix for messages it was not encoded from: get's caller checks them
// (prefix.matches).
type prefixCache struct {
	mu   sync.Mutex
	tick uint64
	m    map[string]*cached
}

type cached struct {
	p    *prefix
	used uint64
}

// get is the prefix kept for the conversation key, or nil.
func (c *prefixCache) get(key string) *prefix {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		return nil
	}
	c.tick++
	e.used = c.tick
	return e.p
}

// put keeps the prefix made of from's messages followed by the messages
// keys (their count) and the body's first cut bytes, whose last group has
// the role last. from is the prefix the body was built on, or nil.
func (c *prefixCache) put(key string, from *prefix, msgs []history.Message, body []byte, cut int, last history.Role) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cached{}
	}
	var keys []msgKey
	e := c.m[key]
	if from != nil && e != nil && e.p == from {
		// from's successor: its keys grow in place (readers of from
		// look only at its first len(from.keys)).
		keys = from.keys
	} else if from != nil {
		keys = append(make([]msgKey, 0, len(from.keys)+len(msgs)), from.keys...)
	}
	if cap(keys)-len(keys) < len(msgs) {
		grown := make([]msgKey, len(keys), len(keys)+len(msgs)+(len(keys)+len(msgs))/4+64)
		copy(grown, keys)
		keys = grown
	}
	for _, m := range msgs {
		keys = append(keys, keyOf(m))
	}
	// keys' spare capacity is for the prefix that follows p; p's readers
	// look only at its length.
	p := &prefix{keys: keys, bytes: body[:cut:cut], lastRole: last}
	c.tick++
	if e != nil {
		e.p, e.used = p, c.tick
		return
	}
	if len(c.m) >= maxPrefixes {
		first, oldest := true, ""
		var at uint64
		for k, v := range c.m {
			if first || v.used < at {
				first, oldest, at = false, k, v.used
			}
		}
		delete(c.m, oldest)
	}
	c.m[key] = &cached{p: p, used: c.tick}
}

// matches reports whether msgs starts with the messages p was made of.
func (p *prefix) matches(msgs []history.Message) bool {
	if len(msgs) < len(p.keys) {
		return false
	}
	for i, k := range p.keys {
		if !k.same(msgs[i]) {
			return false
		}
	}
	return true
}
