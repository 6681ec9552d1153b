package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/myelin-run/myelin/internal/httpguard"
	"github.com/myelin-run/myelin/mcpserver"
)

// mcpShutdownGrace is how long calls in flight have to answer once mcp
// serve is told to stop, before their connections are closed.
const mcpShutdownGrace = 5 * time.Second

// serveMCPHTTP serves srv over streamable HTTP on --http until ctx is
// done, and returns the exit status. The endpoint is guarded as myelin
// serve's API is (internal/httpguard): a token off the loopback
// interface, Host and Origin checked, bodies bounded.
func serveMCPHTTP(ctx context.Context, srv *mcpserver.Server, f mcpServeFlags, stderr io.Writer) int {
	const name = "mcp serve"
	token := f.token
	if token == "" {
		token = os.Getenv("MYELIN_TOKEN")
	}
	guard := mcpGuard(token)
	if err := guard.CheckListen("--http", f.http); err != nil {
		return usageError(stderr, name, err.Error())
	}
	ln, err := net.Listen("tcp", f.http)
	if err != nil {
		return usageError(stderr, name, fmt.Sprintf("--http %s: %v", f.http, err))
	}
	fmt.Fprintf(stderr, "myelin mcp serve: listening on http://%s/\n", ln.Addr())
	ending, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	hs := httpguard.Server(guard.Wrap(endingStreams(ending, srv.Handler())))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// a GET stream stands until its client leaves: end those now, and
		// give the calls in flight a moment to answer
		endStreams()
		gctx, cancel := context.WithTimeout(context.Background(), mcpShutdownGrace)
		defer cancel()
		if hs.Shutdown(gctx) != nil {
			hs.Close()
		}
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	<-stopped
	return exitOK
}

// mcpGuard is the rules the MCP endpoint is served under: myelin serve's,
// with no cross-origin page allowed, and each refusal answered as a
// JSON-RPC error (jsonrpcRefusal).
func mcpGuard(token string) *httpguard.Guard {
	return &httpguard.Guard{Token: token, Refuse: jsonrpcRefusal}
}

// jsonrpcRefusal answers a refused request with status and a JSON-RPC
// error response with no id (the request was not read), code -32000 and
// msg: the shape MCP clients read a failed HTTP answer's body as (the
// TypeScript SDK's own Host check answers so; the Go SDK's client
// surfaces its message).
func jsonrpcRefusal(w http.ResponseWriter, status int, msg string) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{-32000, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// endingStreams wraps next so that each GET request (a standing stream of
// the server's notifications, which lasts until its client leaves) ends
// when stop is done: Shutdown then waits only for the calls in flight.
func endingStreams(stop context.Context, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}
