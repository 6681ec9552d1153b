package mcpserver

import (
	"context"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resources/read costs memory while it runs and until its answer is
// written: a blob of up to MaxBlob bytes, its base64, the JSON-RPC
// message and the SSE event — some 75 MB for a blob of 8 MiB. So that a
// host cannot make the server hold that many times over (many reads at
// once, or a batch of thousands at protocols that have batches), a read
// takes a turn before it reads anything: at most MaxReadsInFlight over
// all sessions, at most MaxReadsPerSession of them one session's, so
// that one session's reads — unread answers that hold their turns until
// the write stall cuts them — queue behind each other, not before another
// session's (a host may open several sessions: the bound over all is
// what holds then). A read takes its turn after its permission check: a check may
// be a question to the host's user, standing until it is answered, and
// holds nothing meanwhile. A turn is held until the read's answer is
// written: the SDK ends a request's context once it wrote the answer
// (v1.8.0, jsonrpc2 processResult), and the turn is given back then. A
// read that waits for a turn ends with its request (a host's
// cancellation, its session's end); one cancelled while it reads keeps
// its turn until its handler returns, and answers with the cancel, not
// what it read. Left (review): a cancel that lands after the handler
// returned, while the SDK encodes the answer and before it takes the
// request off its books, ends the context then, and the turn is given
// back before the answer is written; closing that needs the turn held
// until the answer's own write, below the SDK's jsonrpc2 connection.

// MaxReadsInFlight is how many resources/read requests run at once,
// over all the server's sessions.
const MaxReadsInFlight = 4

// MaxReadsPerSession is how many of the MaxReadsInFlight turns one
// session's reads may hold at once.
const MaxReadsPerSession = 2

// readTurns are the turns of the server's reads.
type readTurns struct {
	all chan struct{} // MaxReadsInFlight
	mu  sync.Mutex
	// of holds each session's own turns while any of its reads holds
	// or waits for one
	of map[*sdk.ServerSession]*sessionTurns
}

// sessionTurns are one session's turns and how many of its reads hold
// or wait for one.
type sessionTurns struct {
	turns chan struct{} // MaxReadsPerSession
	users int
}

// newReadTurns are the turns of a server.
func newReadTurns() *readTurns {
	return &readTurns{all: make(chan struct{}, MaxReadsInFlight), of: map[*sdk.ServerSession]*sessionTurns{}}
}

// take waits for a turn for a read of session ss — one of ss's own, then
// one of the server's — and holds it until both ctx has ended (the answer
// written) and done is called (the read's handler returned): a host that
// cancels its read ends ctx at once, while the handler goes on building
// the answer, which the SDK writes all the same. It ends with ctx's
// error, holding nothing, when ctx ends first.
func (r *readTurns) take(ctx context.Context, ss *sdk.ServerSession) (done func(), err error) {
	r.mu.Lock()
	own := r.of[ss]
	if own == nil {
		own = &sessionTurns{turns: make(chan struct{}, MaxReadsPerSession)}
		r.of[ss] = own
	}
	own.users++
	r.mu.Unlock()
	leave := func() {
		r.mu.Lock()
		if own.users--; own.users == 0 {
			delete(r.of, ss)
		}
		r.mu.Unlock()
	}
	select {
	case own.turns <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("waiting for a turn to read a resource (%d of a session's run at once): %w", MaxReadsPerSession, ctx.Err())
	}
	select {
	case r.all <- struct{}{}:
	case <-ctx.Done():
		<-own.turns
		leave()
		return nil, fmt.Errorf("waiting for a turn to read a resource (%d run at once): %w", MaxReadsInFlight, ctx.Err())
	}
	returned := make(chan struct{})
	go func() { // the turn is the read's until its answer is written
		<-returned
		<-ctx.Done()
		<-r.all
		<-own.turns
		leave()
	}()
	var once sync.Once
	return func() { once.Do(func() { close(returned) }) }, nil
}

// readTurn is the turn of a read of req (readTurns.take), and then
// s.heldRead, when a test set it. The read's handler calls done as it
// returns.
func (s *Server) readTurn(ctx context.Context, req *sdk.ReadResourceRequest) (done func(), err error) {
	done, err = s.reads.take(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	if s.heldRead != nil {
		s.heldRead(req)
	}
	return done, nil
}

// cancelled is the error a read's handler returns in place of what it
// read when its request ended meanwhile (a host's cancel): the SDK
// writes the answer all the same, and a small one costs nothing.
func cancelled(ctx context.Context, uri string) error {
	return fmt.Errorf("the read of %s was cancelled: %w", uri, ctx.Err())
}
