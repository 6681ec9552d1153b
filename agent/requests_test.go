package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// With KeepRequests, the store keeps each request body as the provider
// received it (on Bedrock and Vertex, as the wire built it: the SDK then
// moves the model into the URL and adds anthropic_version), with the place
// of its answer and its usage; without it, none.
func TestKeptRequestsAreWhatTheProviderReceivedOnEveryWire(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			r := newWireRig(t, wire)
			r.agent.KeepRequests = true
			r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("t1", "a.txt")}, Input: 5, Output: 6},
				providertest.Step{Text: "Done.", Input: 1, Output: 2})
			r.turn("go")
			log := r.agent.Store.(history.Requests)
			ctx := context.Background()
			got := r.srv.Requests()
			if n, err := log.RequestCount(ctx, r.id); err != nil || n != 2 || len(got) != 2 {
				t.Fatalf("%d requests kept (%v), the provider got %d", n, err, len(got))
			}
			for i := range got {
				sr, err := log.Request(ctx, r.id, i+1)
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				must(t, fmt.Sprintf("request %d kept as %+v", i+1, sr),
					want{sr.Msg == 1+2*i, fmt.Sprintf("its answer's place %d", 1+2*i)},
					want{sr.Usage != nil, "its usage"},
					want{sr.Error == "", "no error"})
				if sr.Wire != wire {
					t.Fatalf("request %d was kept with the wire %q, want %q (issue 27 §10: it was always empty)", i+1, sr.Wire, wire)
				}
				if wire == "bedrock" || wire == "vertex" {
					if !sameBesidesPlatformFields(t, sr.Body, got[i]) {
						t.Fatalf("request %d kept\n%s\nreceived\n%s", i+1, sr.Body, got[i])
					}
				} else if !bytes.Equal(sr.Body, got[i]) {
					t.Fatalf("request %d kept\n%s\nreceived\n%s", i+1, sr.Body, got[i])
				}
			}

			r.agent.KeepRequests = false
			r.srv.Push(providertest.Step{Text: "again"})
			r.turn("once more")
			if n, _ := log.RequestCount(ctx, r.id); n != 2 {
				t.Fatalf("without KeepRequests the store has %d requests, want still 2", n)
			}
		})
	}
}

// sameBesidesPlatformFields reports whether two bodies are the same JSON
// once model, stream and anthropic_version, which the platform SDKs move
// or add, are left out.
func sameBesidesPlatformFields(t *testing.T, a, b []byte) bool {
	var va, vb map[string]any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		t.Fatalf("not JSON:\n%s\n%s", a, b)
	}
	for _, k := range []string{"model", "stream", "anthropic_version"} {
		delete(va, k)
		delete(vb, k)
	}
	return reflect.DeepEqual(va, vb)
}
