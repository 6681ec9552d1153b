package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// testWait bounds every wait of a test for something that must happen:
// past it, the test fails saying what did not happen (it is no timing
// assertion: a working server does it at once).
const testWait = 5 * time.Second

// The protocol versions tests speak: hosts today (the Node SDK's client,
// Claude Code) speak 2025-11-25, where the server sends requests and log
// levels are set per session; the Go SDK's client speaks 2026-07-28 by
// default, where questions come back as input-required results and each
// request carries its log level.
const (
	hostVersion   = "2025-11-25"
	latestVersion = "2026-07-28"
)

// connect connects a client with opts (nil: no handlers, no
// capabilities) to s over in-memory transports at the protocol's latest
// version, and closes both ends when the test ends.
func connect(t *testing.T, s *Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return connectAt(t, s, opts, latestVersion)
}

// connectAt is connect at protocol version v.
func connectAt(t *testing.T, s *Server, opts *sdk.ClientOptions, v string) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.sdk.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("connecting the server: %v", err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatalf("connecting the client at %s: %v", v, err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// registry is a registry of tools, or the test fails.
func registry(t *testing.T, tools ...*tool.Tool) *tool.Registry {
	t.Helper()
	reg := &tool.Registry{}
	if err := reg.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return reg
}

// openWorkspace is a workspace in a new temporary directory.
func openWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// rawTool is a tool whose handler returns r.
func rawTool(name string, r result.Result) *tool.Tool {
	return &tool.Tool{Name: name, Description: "Gives a fixed result.", Handler: func(context.Context, json.RawMessage) result.Result { return r }}
}

// call calls the tool name with args, or the test fails.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// textOf is the text of a result's text blocks, joined.
func textOf(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitFor waits until cond holds, or fails the test saying what did not
// happen.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, testWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// receive takes the next value from ch, or fails the test saying what
// did not come.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testWait):
		t.Fatalf("%s did not come within %v", what, testWait)
		panic("unreachable")
	}
}
