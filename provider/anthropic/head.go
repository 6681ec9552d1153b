package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/provider"
)

// The head of a request body is what follows its messages: max_tokens,
// the model, the system prompt, the thinking and the tools, each cache
// breakpoint of the stable prefix included. It is written here by hand,
// as the bytes anthropic-sdk-go v2 wrote for json.Marshal of
// sdk.MessageNewParams (which the prompt cache keys on: a conversation's
// cache keeps hitting across the change), without linking the SDK (issue
// 34: cold start). TestTheHeadIsTheSDKs and FuzzTheHeadIsTheSDKs hold the
// two equal. A Provider keeps the last head it encoded with what it was
// encoded from (headCache) and encodes it again only when one of those
// changes, which in an agent's turn is never.

// encodeHead is the head for req: a JSON object ({"max_tokens":...})
// whose members BodyWith splices after the messages. maxTokens is the
// request's, already checked against th. The last tool and the system
// prompt carry a cache breakpoint each (headMarks), of lifetime ttl.
// The members are the SDK's, in its order: max_tokens; model unless
// empty; system unless empty; thinking when th is on
// (Thinking.appendParam); tools unless none, each with its input schema
// (appendSchema), name and description, empty or not. It fails, as the
// SDK did and with its words, when a tool's input schema is not JSON.
func encodeHead(req provider.Request, maxTokens int, th Thinking, ttl CacheTTL) ([]byte, error) {
	size := 160 + len(req.Model) + len(req.System)
	for _, t := range req.Tools {
		size += 96 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"max_tokens":`...)
	b = strconv.AppendInt(b, int64(maxTokens), 10)
	if req.Model != "" {
		b = append(b, `,"model":`...)
		b = appendString(b, req.Model)
	}
	if req.System != "" {
		b = append(b, `,"system":[{"text":`...)
		b = appendString(b, req.System)
		b = append(b, ttl.mark()...)
		b = append(b, `,"type":"text"}]`...)
	}
	b = th.appendParam(b)
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"input_schema":`...)
			var err error
			if b, err = appendSchema(b, t.InputSchema); err != nil {
				return nil, fmt.Errorf("anthropic: encoding the request: %s: %w", sdkSchemaError, err)
			}
			b = append(b, `,"name":`...)
			b = appendString(b, t.Name)
			b = append(b, `,"description":`...)
			b = appendString(b, t.Description)
			if i == len(req.Tools)-1 {
				b = append(b, ttl.mark()...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// sdkSchemaError is what the SDK's encoder said, around the syntax
// error, of a tool's input schema that is not JSON: the error encodeHead
// gives is the SDK's, word for word.
const sdkSchemaError = "json: error calling MarshalJSON for type anthropic.MessageNewParams: " +
	"json: error calling MarshalJSON for type anthropic.ToolUnionParam: " +
	"json: error calling MarshalJSON for type *anthropic.ToolParam: " +
	"json: error calling MarshalJSON for type anthropic.ToolInputSchemaParam: " +
	"json: error calling MarshalJSON for type json.RawMessage"

// appendString appends s to b as a JSON string as the SDK's encoder (a
// copy of encoding/json's, HTML escaping on) writes one: quotes,
// backslashes, control characters, <, > and & escaped, U+2028 and U+2029
// as \u escapes, each byte that is not UTF-8 as \ufffd — jsonstring's
// escapes with html — but backspace and form feed, which it writes \b
// and \f where jsonstring writes \u0008 and \u000c. It is for the head
// only: the messages keep encode.go's escapes.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for {
		i := strings.IndexAny(s, "\b\f")
		if i < 0 {
			break
		}
		// both are ASCII, never part of a character: the text before
		// one is escaped alone as it would be with it
		b = jsonstring.AppendEscaped(b, s[:i], true)
		if s[i] == '\b' {
			b = append(b, `\b`...)
		} else {
			b = append(b, `\f`...)
		}
		s = s[i+1:]
	}
	b = jsonstring.AppendEscaped(b, s, true)
	return append(b, '"')
}

// appendSchema appends a tool's input schema, JSON as the caller gave
// it, as the SDK sent it (a json.RawMessage its encoder passed through
// encoding/json's compaction with HTML escaping): null when nil; else
// compacted (the white space between tokens gone), <, > and & and the
// bytes of U+2028 and U+2029 escaped (they can only be in strings),
// every other byte as given, bytes that are not UTF-8 included. Any JSON
// value is taken, an object or not. It fails with encoding/json's syntax
// error, b unchanged, when schema is not one JSON value (empty, white
// space only, cut short, followed by more).
func appendSchema(b []byte, schema []byte) ([]byte, error) {
	if schema == nil {
		return append(b, "null"...), nil
	}
	start := len(b)
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, schema); err != nil {
		return b, err
	}
	b = buf.Bytes()
	for i := start; i < len(b); i++ {
		if c := b[i]; c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return appendHTMLEscaped(b[:i], bytes.Clone(b[i:])), nil
		}
	}
	return b, nil
}

// appendHTMLEscaped appends src, compact JSON, to dst with <, > and &
// and U+2028 and U+2029 written as \u escapes, as encoding/json's
// HTMLEscape writes them.
func appendHTMLEscaped(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i, c := range src {
		if c == '<' || c == '>' || c == '&' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		}
		if c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			start = i + len("\u2029")
		}
	}
	return append(dst, src[start:]...)
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
