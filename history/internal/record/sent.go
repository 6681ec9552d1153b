package record

import "sync"

// SentBodiesKept bounds how many conversations' newest request bodies a
// store remembers (SentBodies): a server runs many conversations and must
// not hold a body of each for as long as it runs. A conversation
// forgotten has its last body read back at its next request.
const SentBodiesKept = 64

// SentBodies remembers the newest request body a store kept for some
// conversations (at most SentBodiesKept), so that the next request is
// kept by what it adds to it (a delta: base and prefix) without reading
// the last one back. Its zero value is empty and ready; it is safe for
// concurrent use.
//
// A body is taken only as the one stored as request n with meta, the
// newest row's as the store reads it in the insert's transaction: meta
// holds a nonce of the row's own (the stores' storedMeta.Row), which
// tells this store's row from one another opening kept under the same
// number after deleting the conversation and making it again under its
// id. The number alone did not tell them apart, nor would the request's
// fields: a caller may give the time, and two requests of the same time,
// answer, wire and size with other bodies had the same meta
// (TestARequestKeptByAnotherOpeningWithTheSameFieldsIsNotTakenForOurs, in
// both stores). A row of an older build has no nonce and never matches:
// its body is read back. It must not be taken for the stored body
// without that check.
type SentBodies struct {
	mu     sync.Mutex
	bodies map[string]sentBody
}

// sentBody is a conversation's newest request as a store kept it: its
// number, its row's meta as stored, and its body.
type sentBody struct {
	n    int
	meta string
	body []byte
}

// Last returns the body remembered of conversation id when it is request
// n stored with meta; ok is false when it is not (another's, or none).
// The body is shared: it must not be changed.
func (c *SentBodies) Last(id string, n int, meta string) (body []byte, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bodies[id]
	return b.body, ok && b.n == n && b.meta == meta
}

// Remember keeps a copy of body as conversation id's request n, its row's
// meta as stored being meta. Past SentBodiesKept conversations it forgets
// one, any: its body is read back if needed.
func (c *SentBodies) Remember(id string, n int, meta string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bodies == nil {
		c.bodies = map[string]sentBody{}
	}
	if _, ok := c.bodies[id]; !ok && len(c.bodies) >= SentBodiesKept {
		for other := range c.bodies {
			delete(c.bodies, other)
			break
		}
	}
	c.bodies[id] = sentBody{n: n, meta: meta, body: append([]byte(nil), body...)}
}

// Forget drops what is remembered of conversation id: a write of its
// requests failed, or it was deleted (one made again under its id starts
// with nothing remembered).
func (c *SentBodies) Forget(id string) {
	c.mu.Lock()
	delete(c.bodies, id)
	c.mu.Unlock()
}

// Len is how many conversations' bodies are remembered.
func (c *SentBodies) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bodies)
}
