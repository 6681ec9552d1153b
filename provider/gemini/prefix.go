package gemini

import (
	"bytes"
	"slices"
	"sync"
	"unsafe"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// A tool round's request is the last one with an answer and its results
// added, and the same system instruction and tools: encoding all of it
// again was the Gemini wire's largest cost on a light round
// (docs/overhead.md). A Provider keeps, per conversation
// (provider.Request.CacheKey), the bytes of the last request's contents
// up to the last one (prefix: the next message may join that one, and it
// changes as results are kept), with the messages they were made of, and
// the bytes after the contents (tail) with what they were made of. A
// request reuses either only when what it is made of is the same: its
// first messages of the same role and Parts — stored Parts never change
// (contract §7), so Parts at the same address and of the same length are
// the same; others (a view's cleared results and summary, built anew for
// each request) are compared field by field — and the same settings,
// system instruction and tools, compared by value. Anything else is
// encoded again. The bytes sent are always those Body gives
// (TestKeptBytesAreBodysBytes, FuzzKeptBytesAreBodysBytes).

// maxConversations is how many conversations a Provider keeps the bytes
// of; the one used longest ago goes first. What one keeps is about the
// size of its last request's body.
const maxConversations = 8

// msgSeen is a message of a kept prefix as the encoder read it: its role
// and its Parts. Holding the Parts keeps them alive, so that no other
// message's Parts can come to have their address.
type msgSeen struct {
	role  history.Role
	parts []history.Part
}

// prefix is the start of a conversation's body, `{"contents":[` and its
// first contents, and what they were made of. Nothing writes to a prefix
// once it is kept but the spare capacity of seen beyond its length, for
// the one prefix that follows it (keptBodies.put, under its lock).
type prefix struct {
	seen   []msgSeen    // the messages the contents were made of, records and empty ones included
	bytes  []byte       // `{"contents":[` and the contents, no trailing comma
	role   history.Role // the role of the last content in bytes
	native bool         // whether images went inside the function responses
}

// fits reports whether msgs begin with the messages p was made of, for a
// model of the same image handling.
func (p *prefix) fits(msgs []history.Message, native bool) bool {
	if p == nil || p.native != native || len(msgs) < len(p.seen) {
		return false
	}
	for i := range p.seen {
		k, m := &p.seen[i], &msgs[i]
		if k.role != m.Role || len(k.parts) != len(m.Parts) {
			return false
		}
		if len(k.parts) > 0 && unsafe.SliceData(k.parts) != unsafe.SliceData(m.Parts) &&
			!slices.EqualFunc(k.parts, m.Parts, encodesAlike) {
			return false
		}
	}
	return true
}

// encodesAlike reports whether a and b agree in every field the encoder
// reads (all but SpillPath).
func encodesAlike(a, b history.Part) bool {
	a.SpillPath, b.SpillPath = "", ""
	sameBytes := func(x, y []byte) bool { return bytes.Equal(x, y) && (x == nil) == (y == nil) }
	sameImage := func(x, y result.Image) bool { return x.MIMEType == y.MIMEType && bytes.Equal(x.Data, y.Data) }
	return a.Type == b.Type && a.Text == b.Text && a.CallID == b.CallID && a.Name == b.Name &&
		a.IsError == b.IsError && a.Wire == b.Wire && a.Signature == b.Signature &&
		sameBytes(a.Input, b.Input) && sameBytes(a.Raw, b.Raw) && slices.EqualFunc(a.Images, b.Images, sameImage)
}

// tail is the end of a conversation's body, from `,"generationConfig"` to
// its closing brace, and what it was made of: the tools are copies (their
// schemas cloned), so that a caller's later edit of its own cannot make
// them look alike.
type tail struct {
	bytes     []byte
	maxTokens int
	thoughts  bool
	system    string
	tools     []provider.Tool
}

// fits reports whether req and o encode to t's bytes.
func (t *tail) fits(req provider.Request, o Options) bool {
	return t != nil && t.maxTokens == req.MaxTokens && t.thoughts == o.Thoughts && t.system == req.System &&
		slices.EqualFunc(t.tools, req.Tools, func(a, b provider.Tool) bool {
			return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.InputSchema, b.InputSchema)
		})
}

// newTail is the tail made of req and o, which encode to b.
func newTail(req provider.Request, o Options, b []byte) *tail {
	t := &tail{bytes: b, maxTokens: req.MaxTokens, thoughts: o.Thoughts, system: req.System, tools: slices.Clone(req.Tools)}
	for i := range t.tools {
		t.tools[i].InputSchema = bytes.Clone(t.tools[i].InputSchema)
	}
	return t
}

// kept is what one conversation's last request left: either may be nil.
type kept struct {
	key  string
	pre  *prefix
	tail *tail
}

// keptBodies is a Provider's kept bytes, per conversation, the most
// recently used first. It is safe for concurrent use; a nil *keptBodies
// keeps nothing. It hands out a prefix and a tail for the caller to check
// (fits) against its request, never bytes alone.
type keptBodies struct {
	mu    sync.Mutex
	convs []*kept
}

// get is what the conversation key left, or nil.
func (c *keptBodies) get(key string) *kept {
	if c == nil || key == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.convs {
		if k.key == key {
			copy(c.convs[1:i+1], c.convs[:i])
			c.convs[0] = k
			return k
		}
	}
	return nil
}

// put keeps for the conversation key the prefix of msgs — the messages
// after from's, which the first cut bytes of body encode after from's
// bytes, their last content of the role last — and t. A cut of 0 keeps
// from as it is.
func (c *keptBodies) put(key string, from *prefix, msgs []history.Message, body []byte, cut int, last history.Role, native bool, t *tail) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.convs, func(k *kept) bool { return k.key == key })
	pre := from
	if cut > 0 {
		var seen []msgSeen
		switch {
		case from == nil:
		case i >= 0 && c.convs[i].pre == from:
			// from's successor grows from's seen in place: from's
			// readers look at its first len(from.seen) only, and from
			// has no other successor, as it is no longer kept.
			seen = from.seen
		default:
			seen = slices.Clone(from.seen)
		}
		if free := cap(seen) - len(seen); free < len(msgs) {
			seen = slices.Grow(seen, len(msgs)+(len(seen)+len(msgs))/4+64)
		}
		for _, m := range msgs {
			seen = append(seen, msgSeen{role: m.Role, parts: m.Parts})
		}
		pre = &prefix{seen: seen, bytes: body[:cut:cut], role: last, native: native}
	}
	k := &kept{key: key, pre: pre, tail: t}
	switch {
	case i >= 0:
		c.convs = slices.Delete(c.convs, i, i+1)
	case len(c.convs) >= maxConversations:
		c.convs = c.convs[:len(c.convs)-1]
	}
	c.convs = slices.Insert(c.convs, 0, k)
}

// bodyWith is Body, the contents begun with the prefix and ended with the
// tail kept of req's conversation in c when they fit it, and what of it
// the next request may reuse kept there; a nil c encodes it all.
func bodyWith(req provider.Request, o Options, c *keptBodies) ([]byte, error) {
	native := nativeImages(req.Model)
	var pre *prefix
	var t *tail
	if k := c.get(req.CacheKey); k != nil {
		if k.pre.fits(req.Messages, native) {
			pre = k.pre
		}
		if k.tail.fits(req, o) {
			t = k.tail
		}
	}
	for {
		from := 0
		if pre != nil {
			from = len(pre.seen)
		}
		size, calls := sizeHint(req.Messages[from:])
		size += 64
		if pre != nil {
			size += len(pre.bytes)
		}
		if t != nil {
			size += len(t.bytes)
		} else {
			size += 256 + len(req.System)
			for _, tool := range req.Tools {
				size += 64 + len(tool.Name) + len(tool.Description) + len(tool.InputSchema)
			}
		}
		e := &encoder{buf: make([]byte, 0, size)}
		w := contentWriter{e: e, native: native, names: make(map[string]string, calls)}
		if pre != nil {
			e.buf = append(e.buf, pre.bytes...)
			w.before, w.prev = req.Messages[:from], pre.role
		} else {
			e.raw(`{"contents":[`)
		}
		fits, err := w.write(req.Messages[from:])
		if err != nil {
			return nil, err
		}
		if !fits {
			pre = nil // the request's first new content joins the prefix's last
			continue
		}
		e.raw("]")
		if t != nil {
			e.buf = append(e.buf, t.bytes...)
		} else {
			at := len(e.buf)
			if err := appendTail(e, req, o); err != nil {
				return nil, err
			}
			if c != nil {
				t = newTail(req, o, e.buf[at:len(e.buf):len(e.buf)])
			}
		}
		// The next request may reuse the contents before the last one,
		// when there is one before it.
		cut, upTo := 0, from
		if w.lastMsg >= 0 && w.lastPrev != "" {
			cut, upTo = w.lastCut, from+w.lastMsg
		}
		c.put(req.CacheKey, pre, req.Messages[from:upTo], e.buf, cut, w.lastPrev, native, t)
		return e.buf, nil
	}
}
