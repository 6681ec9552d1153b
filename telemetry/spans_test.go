package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/provider"
)

// Off, every call a turn makes for its spans returns at once and
// allocates nothing.
func TestOffTheSpanCallsAllocateNothing(t *testing.T) {
	if On() {
		t.Fatal("telemetry is on in a test that set nothing up")
	}
	ctx := context.Background()
	args := []byte(`{"path":"a.txt"}`)
	allocs := testing.AllocsPerRun(100, func() {
		tctx, turn := StartTurn(ctx, Turn{Conversation: "c", Model: "m", Wire: "anthropic"})
		cctx, chat := StartChat(tctx, Chat{Conversation: "c", Model: "m", Wire: "anthropic", MaxTokens: 10, WindowTokens: 5, WindowLimit: 100})
		chat.Retry(2, 429)
		chat.End(cctx, ChatEnd{FinishReason: "tool_use", Usage: Usage{Input: 1}, RequestBytes: 10})
		xctx, call := StartTool(tctx, Tool{Name: "workspace--read", CallID: "call_1", Arguments: args})
		call.End(xctx, ToolEnd{Bytes: 3, SpillPath: "p", Result: "abc"})
		ContextEdit(tctx, Edit{Kind: EditCleared, Before: 10, After: 5, Cleared: 1})
		turn.End(TurnEnd{Reason: "end_turn", Usage: Usage{Input: 1}})
		if TraceParent(tctx) != "" {
			t.Fatal("off, a context carries a traceparent")
		}
	})
	if allocs != 0 {
		t.Errorf("off, a turn's span calls allocate %v times, want 0", allocs)
	}
}

func TestProviderNamesAreTheConventions(t *testing.T) {
	for wire, want := range map[string]string{
		"anthropic": "anthropic", "google-cloud": "anthropic", "openai": "openai", "openai-responses": "openai",
		"gemini": "gcp.gemini", "bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai", "": "_OTHER", "ollama": "ollama",
	} {
		if got := ProviderName(wire); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", wire, got, want)
		}
	}
}

func TestErrorTypeIsTheStatusOrTheKindOfFailure(t *testing.T) {
	status := provider.StatusError("anthropic", 429, "slow down", errors.New("sdk"))
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.Canceled, "canceled"},
		{fmt.Errorf("send: %w", context.DeadlineExceeded), "timeout"},
		{status, "429"},
		// a platform wraps the wire's error in one without a status
		{&provider.WireError{Msg: "bedrock: " + status.Error(), Err: status}, "429"},
		{errors.Join(errors.New("first"), status), "429"},
		{errors.New("something else"), "_OTHER"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
