package mcpserver

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resources/read costs memory while it runs and until its answer is
// written: a blob of up to MaxBlob bytes, its base64, the JSON-RPC
// message and the SSE event — some 65 MB for a blob of 8 MiB. So that a
// host cannot make the server hold that many times over (many reads at
// once, or a batch of thousands at protocols that have batches), at most
// MaxReadsInFlight reads run at once over all sessions; the others wait
// for a turn, or end with their request (a host's cancellation, its
// session's end). A read holds its turn until its answer is written:
// the SDK ends a request's context once it wrote the answer (v1.8.0,
// jsonrpc2 processResult), and the turn is given back then. A host that
// does not read its answer holds the turn until the write fails
// (Config.WriteStall, stall.go).

// MaxReadsInFlight is how many resources/read requests run at once,
// over all the server's sessions.
const MaxReadsInFlight = 4

// methodRead is the method bounded.
const methodRead = "resources/read"

// boundReads is the SDK middleware that makes a resources/read wait for
// one of the server's MaxReadsInFlight turns (s.reads), and hold it
// until its answer is written.
func (s *Server) boundReads(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != methodRead {
			return next(ctx, method, req)
		}
		select {
		case s.reads <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a turn to read a resource (%d run at once): %w", MaxReadsInFlight, ctx.Err())
		}
		res, err := next(ctx, method, req)
		go func() { // the turn is the read's until its answer is written
			<-ctx.Done()
			<-s.reads
		}()
		return res, err
	}
}
