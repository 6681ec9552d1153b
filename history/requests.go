package history

import (
	"context"
	"time"
)

// SentRequest is one request a wire sent to its provider for a
// conversation: its body byte for byte, as the wire handed it to HTTP, and
// what came back (contract §13: each request can be read back byte for
// byte).
type SentRequest struct {
	// N is its number in the conversation, from 1; set by the store.
	N int `json:"n"`
	// Msg is the place (from 0) of the stored answer it produced, -1 when
	// it produced none (refused, failed, cut). The HTTP API serves it as
	// the answer's number in /messages (from 1), left out for none.
	Msg int `json:"msg"`
	// Wire names the wire that built it ("anthropic", "openai", ...).
	Wire string `json:"wire"`
	// Body is the request body as sent (nil in RequestList's answers).
	Body []byte `json:"-"`
	// Size is the body's size in bytes; set by the store.
	Size int `json:"size"`
	// Usage is what the provider said it cost, nil when it said nothing.
	Usage *Usage `json:"usage,omitempty"`
	// Error is why it produced no answer, "" when it did.
	Error string `json:"error,omitempty"`
	// Time is when it was sent.
	Time time.Time `json:"time"`
}

// Requests is the part of a Store that keeps the requests sent for each
// conversation. It is optional: a Store without it keeps conversations,
// and the API says that it cannot show the requests. A store keeps a
// request's body whole only when it differs from the one before it from
// its first byte; otherwise it keeps what the two share by its length and
// the rest by its bytes (delta), since a conversation's requests grow by
// appending and so cost the store about what the conversation does.
type Requests interface {
	// AddRequest keeps r as conversation id's next request and returns its
	// number. It need not wait for the disk (a request is a record of what
	// was sent, not a promise of contract §7). It keeps a copy of r.Body:
	// the caller's bytes are the caller's again once it returns.
	AddRequest(ctx context.Context, id string, r SentRequest) (int, error)
	// Request returns conversation id's n-th request, body whole; an n it
	// does not have is an error wrapping ErrNotFound.
	Request(ctx context.Context, id string, n int) (SentRequest, error)
	// RequestCount is how many requests conversation id has.
	RequestCount(ctx context.Context, id string) (int, error)
	// RequestList returns conversation id's requests in order, each
	// without its body (Size says how big it is): what a listing needs,
	// at the cost of the requests' few fields, not of their bodies.
	RequestList(ctx context.Context, id string) ([]SentRequest, error)
}

// CommonPrefix is how many bytes a and b share from their first.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && string(a[i:i+8]) == string(b[i:i+8]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
