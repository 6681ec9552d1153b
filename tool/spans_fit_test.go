package tool

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
)

// savedFiles is a result.Store in memory.
type savedFiles struct {
	mu    sync.Mutex
	files map[string]string
}

func (f *savedFiles) Save(name, data string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := ".myelin/tool-results/" + name
	f.files[path] = data
	return path, nil
}

// A tool call's span says the result as the model gets it: when the round
// bound (result.Fit) cuts a result that fit its own cap — spilling it to
// a file — the call's span names that file and the size the model reads,
// as it does for a result cut by its own cap.
func TestACallsSpanSaysTheSpillTheRoundBoundMade(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	restore, err := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), noop.NewMeterProvider(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	lines := MustFunc("lines", "Returns lines.", func(ctx context.Context, in greetInput) (any, error) {
		return strings.Repeat(in.Name+" line\n", 400), nil // 4,000 characters: under the cap, over the round's bound with the other
	})
	d := dispatcher(t, lines)
	d.Env = result.Env{Store: &savedFiles{files: map[string]string{}}, Limits: result.Limits{Agent: 20000, Round: 5000}}
	outs := d.Round(context.Background(), []Call{
		{ID: "call_a", Name: "lines", Input: json.RawMessage(`{"name":"aaaa"}`)},
		{ID: "call_b", Name: "lines", Input: json.RawMessage(`{"name":"bbbb"}`)},
	})
	spilled := 0
	for _, s := range rec.Ended() {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		id := attrs["gen_ai.tool.call.id"].AsString()
		i := map[string]int{"call_a": 0, "call_b": 1}[id]
		out := outs[i]
		if out.SpillPath != "" {
			spilled++
		}
		if got := attrs["myelin.tool.result.spill_path"].AsString(); got != out.SpillPath {
			t.Errorf("call %s's span says spill path %q; the model was given %q", id, got, out.SpillPath)
		}
		if got := attrs["myelin.tool.result.bytes"].AsInt64(); got != int64(len(out.Text)) {
			t.Errorf("call %s's span says %d bytes; the model was given %d", id, got, len(out.Text))
		}
	}
	if spilled == 0 {
		t.Fatalf("the round bound spilled no result (outputs of %d and %d characters): the test does not test what it says", len(outs[0].Text), len(outs[1].Text))
	}
}
