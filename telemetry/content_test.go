package telemetry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/myelin-run/myelin/provider"
)

// Without the opt-in, no span carries what the user or the model said —
// not even in an error's status: a provider's error answer may quote the
// request (an OpenAI-compatible proxy's "received messages=[...]"), and
// a malformed stream's error quotes the event, the model's text. The
// status then says the error's type; with the opt-in, its message.
func TestAFailedSpansStatusCarriesNoContentWithoutTheOptIn(t *testing.T) {
	const secret = "my secret prompt"
	echo := provider.StatusError("openai", 400, fmt.Sprintf("invalid request: received messages=[{'role': 'user', 'content': '%s'}]", secret), nil)
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprintf("content=%v", content), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			restore, err := Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), noop.NewMeterProvider(), content)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			ctx, turn := StartTurn(context.Background(), Turn{Conversation: "c", Model: "m", Wire: "openai"})
			cctx, chat := StartChat(ctx, Chat{Conversation: "c", Model: "m", Wire: "openai"})
			chat.End(cctx, ChatEnd{Err: echo})
			turn.End(TurnEnd{Err: fmt.Errorf("the request failed: %w", echo)})
			ended := rec.Ended()
			if len(ended) != 2 {
				t.Fatalf("%d spans ended; want the chat's and the turn's", len(ended))
			}
			for _, s := range ended {
				desc := s.Status().Description
				if got := strings.Contains(desc, secret); got != content {
					t.Errorf("span %s's status is %q: carries the request's text %v, want %v (content capture %v)", s.Name(), desc, got, content, content)
				}
				if !strings.Contains(desc, "400") {
					t.Errorf("span %s's status is %q; want it to say the error's type, 400", s.Name(), desc)
				}
				for _, e := range s.Events() {
					for _, kv := range e.Attributes {
						if strings.Contains(kv.Value.Emit(), secret) && !content {
							t.Errorf("span %s's event %s carries the request's text in %s", s.Name(), e.Name, kv.Key)
						}
					}
				}
			}
		})
	}
}
