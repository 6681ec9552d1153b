package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/myelin-run/myelin/result"
)

// The go-sdk decodes a tools/call result into its own types, and a content
// block of a type it does not know fails the whole call. myelin reads the
// result itself (result.FromMCP, contract §4), so the transports take the raw
// result JSON out of the reply before the SDK sees it: a call puts a slot in
// its context, the transport notes the request's id when it is sent, and
// when the reply for that id comes it keeps the raw result in the slot and
// hands the SDK an empty one, which it always decodes.

// slot receives the raw result of one tools/call.
type slot struct {
	mu  sync.Mutex
	id  jsonrpc.ID
	raw json.RawMessage
	// refused is set when the server answered with a JSON-RPC error: the
	// call has its answer, and the session is alive.
	refused bool
	// null is set when the reply's result was JSON null.
	null bool
	// res is the result of a large reply of text, read from a file
	// (takeSpooled) rather than kept as raw JSON; its text is a file that
	// the call takes over.
	res *result.Result
	// done is set once the call no longer waits: a result that comes
	// after it is discarded at once, so that its file is not left behind.
	done bool
}

// setResult keeps r, a result read from a large reply, for the call.
func (s *slot) setResult(r result.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		result.Discard(r)
		return
	}
	s.res = &r
}

// result takes the result read from a large reply, if one came.
func (s *slot) result() (result.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res == nil {
		return result.Result{}, false
	}
	r := *s.res
	s.res = nil
	return r, true
}

// finish says the call no longer waits, and discards a result it did not
// take.
func (s *slot) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.res != nil {
		result.Discard(*s.res)
		s.res = nil
	}
}

func (s *slot) setNull() {
	s.mu.Lock()
	s.null = true
	s.mu.Unlock()
}

// isNull reports whether the server's reply had "result": null.
func (s *slot) isNull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.null
}

func (s *slot) refuse() {
	s.mu.Lock()
	s.refused = true
	s.mu.Unlock()
}

// answeredWithError reports whether the server's reply was a JSON-RPC
// error.
func (s *slot) answeredWithError() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *slot) set(raw json.RawMessage) {
	s.mu.Lock()
	s.raw = raw
	s.mu.Unlock()
}

func (s *slot) get() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

type slotKey struct{}

func withSlot(ctx context.Context, s *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

func slotFrom(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// emptyResult is what the SDK decodes in place of a captured result.
var emptyResult = json.RawMessage(`{"content":[]}`)

// captor pairs sent tools/call requests with their replies. The zero value
// is ready to use.
type captor struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]*slot
}

// callSlot is the slot of msg when it is a tools/call sent with a slot in
// ctx, its id noted in it; else nil.
func callSlot(ctx context.Context, msg jsonrpc.Message) *slot {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		return nil
	}
	s := slotFrom(ctx)
	if s != nil {
		s.id = req.ID
	}
	return s
}

// sent notes a request; only a tools/call sent with a slot in ctx is kept.
func (c *captor) sent(ctx context.Context, msg jsonrpc.Message) *slot {
	s := callSlot(ctx, msg)
	if s == nil {
		return nil
	}
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[jsonrpc.ID]*slot{}
	}
	c.pending[s.id] = s
	c.mu.Unlock()
	return s
}

// received takes the raw result out of a reply to a noted request.
func (c *captor) received(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.mu.Lock()
	s := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if s != nil {
		take(s, resp)
	}
}

// waiting is the slot of the tools/call with this id, when one waits for
// its reply.
func (c *captor) waiting(id jsonrpc.ID) *slot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[id]
}

// forget drops a request whose reply will not come (its write failed).
func (c *captor) forget(s *slot) {
	c.mu.Lock()
	delete(c.pending, s.id)
	c.mu.Unlock()
}

// take moves a reply's result into s, leaving the SDK an empty result. A
// result that is not final (a "resultType" other than "complete": the
// server asks for input and the SDK will send the call again) stays with
// the SDK.
func take(s *slot, resp *jsonrpc.Response) {
	if resp.Error != nil {
		s.refuse()
		return
	}
	if bytes.Equal(bytes.TrimSpace(resp.Result), []byte("null")) {
		// Not a result at all: the call says so, and the SDK gets an
		// empty one to decode.
		s.setNull()
		resp.Result = emptyResult
		return
	}
	if resp.Result == nil || !final(resp.Result) {
		return
	}
	s.set(resp.Result)
	resp.Result = emptyResult
}

func final(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"resultType"`)) {
		return true
	}
	var r struct {
		ResultType *string `json:"resultType"`
	}
	return json.Unmarshal(raw, &r) != nil || r.ResultType == nil || *r.ResultType == "complete"
}
