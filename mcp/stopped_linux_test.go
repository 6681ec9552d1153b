package mcp

import (
	"strings"
	"testing"
)

// A server that stops the supervisor it runs under (SIGSTOP to its
// parent) and then exits is seen gone at once, as any server that exits
// mid-call: before, the stopped supervisor held the server's stdout open
// and the call waited for its timeout.
func TestAServerThatStopsItsSupervisorAndExitsIsSeenGone(t *testing.T) {
	s := testServer("t")
	s.TimeoutMS = 10_000
	h := start(t, []Server{s}, Options{})
	out := h.call("t--stopcrash", `{}`)
	if !out.IsError || !strings.Contains(out.Text, "the server exited (exit status 3) during the call") {
		t.Fatalf("the call: %q (error %v), want an error saying the server exited", out.Text, out.IsError)
	}
}
