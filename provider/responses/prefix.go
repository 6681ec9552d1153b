package responses

import (
	"bytes"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// Consecutive requests of a conversation share their start: the model,
// the tools, the instructions and every message of the one before (a
// round adds an answer and its results; this wire marks no cache
// breakpoints that move). Encoding all of it again was most of encoding a
// body in a tool loop. A Provider keeps, per conversation
// (provider.Request.CacheKey), the bytes of the last body up to the end
// of its input items, with what they were made of: the model, the tools
// and the instructions, and each message's role and Parts. A request
// takes as much of them as it begins with: the same model, instructions
// and tools (compared field by field), then message by message while each
// is the same — stored messages never change (contract §7), so Parts at
// the same address and of the same length are the same, and other Parts
// (a view's cleared results and summary, built anew for each request) are
// compared field by field. The rest is encoded. The bytes sent are always
// those Body gives (TestCachedBodiesAreBodysBytes,
// FuzzCachedBodiesAreBodysBytes).

// maxPrefixes is how many conversations a Provider keeps the start of;
// the one used longest ago goes first. A prefix holds about the size of
// the conversation's request body.
const maxPrefixes = 8

// kept is one message a prefix was made of: its role and Parts (holding
// them keeps them alive, so that no other message's Parts can come to
// have their address), and where its items end in the prefix's bytes.
type kept struct {
	role  history.Role
	parts []history.Part
	end   int
}

// prefix is the start of a conversation's body: from `{"model":` to the
// end of its input items (no closing bracket). Its bytes are never
// written to once kept; its keys only beyond their length, by
// prefixCache.put under its lock, for the one prefix that follows it.
type prefix struct {
	model, system string
	tools         []provider.Tool
	head          int // where the input items start in bytes
	keys          []kept
	bytes         []byte
}

// matches is how many of req's first messages p holds the items of, -1
// when p's head (model, tools, instructions) is not req's.
func (p *prefix) matches(req provider.Request) int {
	if p.model != req.Model || p.system != req.System || len(p.tools) != len(req.Tools) {
		return -1
	}
	for i := range p.tools {
		a, b := &p.tools[i], &req.Tools[i]
		if a.Name != b.Name || a.Description != b.Description || !bytes.Equal(a.InputSchema, b.InputSchema) ||
			(a.InputSchema == nil) != (b.InputSchema == nil) {
			return -1
		}
	}
	n := min(len(p.keys), len(req.Messages))
	for i := range n {
		if !p.keys[i].same(req.Messages[i]) {
			return i
		}
	}
	return n
}

// end is where the items of the first n messages end in p's bytes.
func (p *prefix) end(n int) int {
	if n == 0 {
		return p.head
	}
	return p.keys[n-1].end
}

// same reports whether m encodes as the message k was made from: the same
// role, and the same Parts or Parts whose encoded fields are equal
// (provider.SameParts).
func (k *kept) same(m history.Message) bool {
	return k.role == m.Role && provider.SameParts(k.parts, m.Parts)
}

// prefixCache is a Provider's prefixes, per conversation. It is safe for
// concurrent use; a nil *prefixCache keeps nothing. It must never hand out
// bytes for messages they were not encoded from: get's caller takes only
// as much as prefix.matches says.
type prefixCache struct {
	mu   sync.Mutex
	tick uint64
	m    map[string]*cachedPrefix
}

type cachedPrefix struct {
	p    *prefix
	used uint64
}

// get is the prefix kept for the conversation key, or nil; a request
// with no key has none.
func (c *prefixCache) get(key string) *prefix {
	if c == nil || key == "" {
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

// put keeps, for req's conversation, the prefix whose bytes are body (a
// body's start, to the end of its input items) made of req: the first
// reused messages' items taken from from (nil for none), the rest
// encoded, each message's ending at ends[i].
func (c *prefixCache) put(req provider.Request, from *prefix, reused int, head int, ends []int, body []byte) {
	if c == nil || req.CacheKey == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cachedPrefix{}
	}
	e := c.m[req.CacheKey]
	var keys []kept
	if from != nil && reused == len(from.keys) && e != nil && e.p == from {
		// from's successor: its keys grow in place (readers of from look
		// only at its first len(from.keys))
		keys = from.keys
	} else if from != nil {
		keys = append(make([]kept, 0, reused+len(ends)), from.keys[:reused]...)
	}
	if grow := len(ends); cap(keys)-len(keys) < grow {
		grown := make([]kept, len(keys), len(keys)+grow+(len(keys)+grow)/4+64)
		copy(grown, keys)
		keys = grown
	}
	for i, m := range req.Messages[reused:] {
		keys = append(keys, kept{role: m.Role, parts: m.Parts, end: ends[i]})
	}
	tools := req.Tools
	if from != nil {
		tools = from.tools // the same, as matches found
	} else {
		tools = append([]provider.Tool(nil), tools...) // the caller's slice may change
	}
	p := &prefix{model: req.Model, system: req.System, tools: tools, head: head, keys: keys, bytes: body}
	c.tick++
	if e != nil {
		e.p, e.used = p, c.tick
		return
	}
	if len(c.m) >= maxPrefixes {
		oldest, at := "", uint64(0)
		for k, v := range c.m {
			if oldest == "" || v.used < at {
				oldest, at = k, v.used
			}
		}
		delete(c.m, oldest)
	}
	c.m[req.CacheKey] = &cachedPrefix{p: p, used: c.tick}
}
