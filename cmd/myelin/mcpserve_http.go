package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/myelin-run/myelin/mcpserver"
)

// serveMCPHTTP serves srv over streamable HTTP on --http until ctx is
// done, and returns the exit status.
func serveMCPHTTP(ctx context.Context, srv *mcpserver.Server, f mcpServeFlags, stderr io.Writer) int {
	const name = "mcp serve"
	ln, err := net.Listen("tcp", f.http)
	if err != nil {
		return usageError(stderr, name, fmt.Sprintf("--http %s: %v", f.http, err))
	}
	fmt.Fprintf(stderr, "myelin mcp serve: listening on http://%s/\n", ln.Addr())
	hs := &http.Server{Handler: srv.Handler()}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "myelin %s: %v\n", name, err)
		return exitError
	}
	return exitOK
}
