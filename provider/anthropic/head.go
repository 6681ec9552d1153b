package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/myelin-run/myelin/provider"
)

// The head of a request body is what follows its messages: max_tokens,
// the model, the system prompt, the thinking and the tools, each cache
// breakpoint of the stable prefix included. It is encoded by the SDK's
// types (json.Marshal of sdk.MessageNewParams), which is the bytes the
// API's types define but costs a reflective walk of every tool's schema:
// about a sixth of a light round's time in the wire. A Provider keeps the
// last head it encoded with what it was encoded from (headCache) and
// encodes it again only when one of those changes, which in an agent's
// turn is never.

// encodeHead is the head for req: a JSON object ({"max_tokens":...})
// whose members BodyWith splices after the messages. maxTokens is the
// request's, already checked against th. The last tool and the system
// prompt carry a cache breakpoint each (headMarks), of lifetime ttl.
func encodeHead(req provider.Request, maxTokens int, th Thinking, ttl CacheTTL) ([]byte, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(maxTokens),
		Thinking:  th.param(),
	}
	for i, t := range req.Tools {
		tp := sdk.ToolParam{
			Name:        t.Name,
			Description: param.NewOpt(t.Description),
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(t.InputSchema)),
		}
		if i == len(req.Tools)-1 {
			tp.CacheControl = ttl.param()
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: ttl.param()}}
	}
	head, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	return head, nil
}

// headMarks is how many cache breakpoints the head of req holds: one on
// its last tool, one on its system prompt.
func headMarks(req provider.Request) int {
	n := 0
	if len(req.Tools) > 0 {
		n++
	}
	if req.System != "" {
		n++
	}
	return n
}

// headCache is the last head a Provider encoded and what it was encoded
// from, its own copy of it (a caller may reuse the bytes of a schema).
// It is safe for concurrent use; a nil *headCache keeps nothing. It must
// not hand out a head for inputs that differ in any byte from those it
// was encoded from.
type headCache struct {
	mu        sync.Mutex
	ok        bool
	model     string
	system    string
	maxTokens int
	th        Thinking
	ttl       CacheTTL
	tools     []provider.Tool
	encoded   []byte // never written to once stored
}

// head is the head for req, from the cache when req's model, system
// prompt, tools and maxTokens, th and ttl are those it was last encoded
// from, else encoded and kept.
func (c *headCache) head(req provider.Request, maxTokens int, th Thinking, ttl CacheTTL) ([]byte, error) {
	if c == nil {
		return encodeHead(req, maxTokens, th, ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.model == req.Model && c.system == req.System && c.maxTokens == maxTokens && c.th == th && c.ttl == ttl && sameTools(c.tools, req.Tools) {
		return c.encoded, nil
	}
	head, err := encodeHead(req, maxTokens, th, ttl)
	if err != nil {
		c.ok = false
		return nil, err
	}
	tools := make([]provider.Tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = provider.Tool{Name: t.Name, Description: t.Description, InputSchema: bytes.Clone(t.InputSchema)}
	}
	c.ok, c.model, c.system, c.maxTokens, c.th, c.ttl, c.tools, c.encoded = true, req.Model, req.System, maxTokens, th, ttl, tools, head
	return head, nil
}

// sameTools reports whether a and b are the same tools, byte for byte
// (a nil schema and an empty one differ: the SDK encodes them apart).
func sameTools(a, b []provider.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description ||
			(a[i].InputSchema == nil) != (b[i].InputSchema == nil) || !bytes.Equal(a[i].InputSchema, b[i].InputSchema) {
			return false
		}
	}
	return true
}
