package gemini

import (
	"bytes"
	"slices"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
)

// A tool round's request is the last one with an answer and its results
// added, and the same system instruction and tools: encoding all of it
// again was the Gemini wire's largest cost on a light round
// (docs/overhead.md). A Provider keeps, per conversation
// (provider.Request.CacheKey), the bytes of the last request's contents
// up to the last one (prefix, prefix.Cache: the next message may
// join that one, and it changes as results are kept), with the messages
// they were made of, and, once per Provider, the bytes after the contents
// of the last request encoded (tail) with what they were made of. A
// request reuses either only when what it is made of is the same: its
// first messages of the same role and Parts — stored Parts never change
// (contract §7), so Parts at the same address and of the same length are
// the same; others (a view's cleared results and summary, built anew for
// each request) are compared field by field — and the same settings,
// system instruction and tools, compared by value. Anything else is
// encoded again. The bytes sent are always those Body gives
// (TestKeptBytesAreBodysBytes, FuzzKeptBytesAreBodysBytes).

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
	// b is copied: the body it is cut from may carry the conversation's
	// next body once given back (keptBodies.release)
	t := &tail{bytes: bytes.Clone(b), maxTokens: req.MaxTokens, thoughts: o.Thoughts, system: req.System, tools: slices.Clone(req.Tools)}
	for i := range t.tools {
		t.tools[i].InputSchema = bytes.Clone(t.tools[i].InputSchema)
	}
	return t
}

// keptBodies is a Provider's kept bytes: per conversation, the prefix of
// its last request (prefix.Cache, kept after a lead that says how the
// model takes images, which changes how results encode), and the last
// tail encoded, which any conversation of the same settings, system
// instruction and tools may reuse. It is safe for concurrent use; a nil
// *keptBodies keeps nothing.
type keptBodies struct {
	prefixes prefix.Cache
	mu       sync.Mutex
	tail     *tail
}

// leadOf is the lead a prefix is kept after: whether images went inside
// the function responses.
func leadOf(native bool) string {
	if native {
		return "images in function responses"
	}
	return "images after function responses"
}

// prefix is the kept prefix for req's conversation when it fits req.
func (c *keptBodies) prefix(req provider.Request, native bool) *prefix.Prefix {
	if c == nil || req.CacheKey == "" {
		return nil
	}
	return c.prefixes.Get(req.CacheKey, leadOf(native), req.Messages)
}

// lastTail is the tail last kept when req and o encode to it, else nil.
func (c *keptBodies) lastTail(req provider.Request, o Options) *tail {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	t := c.tail
	c.mu.Unlock()
	if !t.fits(req, o) {
		return nil
	}
	return t
}

// keep keeps for req's conversation the prefix of msgs — the messages
// after from's, which body encodes after from's bytes, their last content
// of the role last — and t as the last tail. An empty body keeps from as
// it is.
func (c *keptBodies) keep(req provider.Request, native bool, from *prefix.Prefix, msgs []history.Message, body []byte, last history.Role, t *tail) {
	if c == nil {
		return
	}
	if len(body) > 0 && req.CacheKey != "" {
		c.prefixes.Put(req.CacheKey, leadOf(native), from, msgs, body, last)
	}
	if t != nil {
		c.mu.Lock()
		c.tail = t
		c.mu.Unlock()
	}
}

// release gives back body, sent for req and answered: its memory may carry
// the conversation's next body (prefix.Cache.Release).
func (c *keptBodies) release(req provider.Request, body []byte) {
	if c != nil && req.CacheKey != "" {
		c.prefixes.Release(req.CacheKey, body)
	}
}

// bodyWith is Body, the contents begun with the prefix and ended with the
// tail kept of req's conversation in c when they fit it, and what of it
// the next request may reuse kept there; a nil c encodes it all.
func bodyWith(req provider.Request, o Options, c *keptBodies) ([]byte, error) {
	native := nativeImages(req.Model)
	pre := c.prefix(req, native)
	t := c.lastTail(req, o)
	for {
		from := 0
		if pre != nil {
			from = pre.Len()
		}
		size, calls := sizeHint(req.Messages[from:])
		size += 64
		if pre != nil {
			size += len(pre.Bytes())
		}
		if t != nil {
			size += len(t.bytes)
		} else {
			size += 256 + len(req.System)
			for _, tool := range req.Tools {
				size += 64 + len(tool.Name) + len(tool.Description) + len(tool.InputSchema)
			}
		}
		e := &encoder{}
		w := contentWriter{e: e, native: native, names: make(map[string]string, calls)}
		if pre != nil {
			// the prefix's bytes, in the memory of the conversation's
			// last body when it was given back
			e.buf = c.prefixes.Buffer(req.CacheKey, pre, size)
			w.before, w.prev = req.Messages[:from], pre.Last()
		} else {
			e.buf = hugepage.Make[byte](0, size) // huge pages at a run's start (internal/hugepage)
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
		var newT *tail
		if t != nil {
			e.buf = append(e.buf, t.bytes...)
		} else {
			at := len(e.buf)
			if err := appendTail(e, req, o); err != nil {
				return nil, err
			}
			if c != nil {
				newT = newTail(req, o, e.buf[at:len(e.buf):len(e.buf)])
			}
		}
		// The next request may reuse the contents before the last one,
		// when there is one before it.
		var kept []byte
		upTo := from
		if w.lastMsg >= 0 && w.lastPrev != "" {
			kept, upTo = e.buf[:w.lastCut], from+w.lastMsg
		}
		c.keep(req, native, pre, req.Messages[from:upTo], kept, w.lastPrev, newT)
		return e.buf, nil
	}
}
