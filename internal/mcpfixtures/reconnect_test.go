package mcpfixtures

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingGETs counts the GET requests that reach h: a client resuming
// an SSE stream sends one with Last-Event-ID.
type countingGETs struct {
	h       http.Handler
	resumed atomic.Int32
}

func (c *countingGETs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		c.resumed.Add(1)
	}
	c.h.ServeHTTP(w, r)
}

func TestReconnectionToolAnswersAClientThatResumesItsClosedStream(t *testing.T) {
	// Over streamable HTTP with the events kept (as mcpserver.Handler
	// keeps them), at the suite's version: the tool closes its call's
	// stream, and the client gets the answer by resuming it.
	srv := sdk.NewServer(&sdk.Implementation{Name: "fixtures", Version: "test"}, nil)
	Register(srv)
	h := &countingGETs{h: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})}
	ts := httptest.NewServer(h)
	defer ts.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: suiteVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "test_reconnection", nil)
	if got := texts(res.Content); res.IsError || !slices.Equal(got, []string{"Reconnection test completed successfully"}) {
		t.Errorf("test_reconnection answered %q (isError %v)", got, res.IsError)
	}
	if h.resumed.Load() == 0 {
		t.Errorf("the client never resumed a stream (no GET with Last-Event-ID): the tool did not close its stream")
	}
}
