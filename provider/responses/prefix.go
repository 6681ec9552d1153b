package responses

import (
	"bytes"
	"sync"

	"github.com/myelin-run/myelin/internal/prefix"
	"github.com/myelin-run/myelin/provider"
)

// Consecutive requests of a conversation share their start: the model,
// the tools, the instructions and every message of the one before (a
// round adds an answer and its results; this wire marks no cache
// breakpoints that move). Encoding all of it again was most of encoding a
// body in a tool loop. A Provider keeps, per conversation
// (provider.Request.CacheKey), the bytes of the last body up to the end
// of its input items, with each message's role, Parts and where its items
// end (prefix.Cache, kept after the encoded head). A request takes
// as much of them as it begins with: the same head, then message by
// message while each is the same — stored messages never change
// (contract §7), so Parts at the same address and of the same length are
// the same, and other Parts (a view's cleared results and summary, built
// anew for each request) are compared field by field
// (Prefixes.GetPartial). The rest is encoded. The bytes sent are always
// those Body gives (TestCachedBodiesAreBodysBytes,
// FuzzCachedBodiesAreBodysBytes).
//
// The head — `{"model":` to the opening of "input", with the tools and
// the instructions — is the lead the prefixes are kept after: exact by
// construction, since equal heads are equal bytes sent. A Provider keeps
// the heads it encoded last (heads), each with the model, instructions
// and tools it was made of, so that a request's head is found by
// comparing those fields (strings and schemas at the same address compare
// at once) and the tools are not encoded again per request.

// kept is what a Provider keeps of its recent requests to build the next
// ones on: their heads and, per conversation, their bodies' starts.
type kept struct {
	heads    heads
	prefixes prefix.Cache
}

// heads is a Provider's recently encoded heads, as many as conversations
// are kept, the one used longest ago replaced first; it is safe for
// concurrent use. A head is handed out
// only for a request whose model, instructions and tools are those it was
// encoded from.
type heads struct {
	mu   sync.Mutex
	tick uint64
	kept [prefix.MaxConversations]encodedHead
}

// encodedHead is a head's bytes with what they were encoded from: tools
// is a copy of the request's slice, which its caller may edit in place.
type encodedHead struct {
	model, system string
	tools         []provider.Tool
	bytes         string
	used          uint64
}

// of is req's encoded head, from those h keeps when one was made of req's
// model, instructions and tools, else encoded and kept. A tool whose
// schema is not a JSON object is an error naming it, and nothing is kept.
func (h *heads) of(req provider.Request) (string, error) {
	h.mu.Lock()
	h.tick++
	oldest := 0
	for i := range h.kept {
		k := &h.kept[i]
		if k.used != 0 && k.model == req.Model && k.system == req.System && sameTools(k.tools, req.Tools) {
			k.used = h.tick
			h.mu.Unlock()
			return k.bytes, nil
		}
		if k.used < h.kept[oldest].used {
			oldest = i
		}
	}
	h.mu.Unlock()
	var e encoder
	if err := e.head(req); err != nil {
		return "", err
	}
	k := encodedHead{model: req.Model, system: req.System, tools: append([]provider.Tool(nil), req.Tools...), bytes: string(e.buf)}
	h.mu.Lock()
	h.tick++
	k.used = h.tick
	h.kept[oldest] = k // another caller may have replaced it meanwhile: a head is only dropped
	h.mu.Unlock()
	return k.bytes, nil
}

// sameTools reports whether a and b encode alike: the same fields, in the
// same order.
func sameTools(a, b []provider.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.Description != y.Description || !bytes.Equal(x.InputSchema, y.InputSchema) ||
			(x.InputSchema == nil) != (y.InputSchema == nil) {
			return false
		}
	}
	return true
}
