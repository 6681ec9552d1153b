package responses

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3/responses"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// longRequest is a conversation of n messages: a prompt, then answers that
// reason and call a tool, each followed by its 1,000-character result.
func longRequest(n int) provider.Request {
	req := sampleRequest()
	req.Messages = []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	result := strings.Repeat("a line of output\n", 60)
	for i := 1; len(req.Messages) < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		thought := fmt.Sprintf("Round %d: read the next file.", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{
				Reasoning([]string{thought}, nil, providertest.Encrypted(thought), true),
				{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: result}}})
	}
	return req
}

// BenchmarkBody encodes a 10,000-message request with Body, and the same
// request with the SDK's typed params (its reflective encoder), side by
// side. Run:
//
//	go test ./provider/responses -run '^$' -bench Body -count 3
func BenchmarkBody(b *testing.B) {
	req := longRequest(10000)
	b.Run("Body", func(b *testing.B) {
		for range b.N {
			if _, err := Body(req, Config{}, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		body, err := Body(req, Config{}, true)
		if err != nil {
			b.Fatal(err)
		}
		var p oai.ResponseNewParams
		if err := json.Unmarshal(body, &p); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkToolLoopBodies encodes the bodies of a light turn — 20
// requests, each after a round of ten calls of a tool with no arguments —
// whole (Body) and each from the one before (bodyWith and a prefix
// cache, as Complete does), side by side; an op is the whole turn. Run:
//
//	go test ./provider/responses -run '^$' -bench ToolLoopBodies -benchmem
func BenchmarkToolLoopBodies(b *testing.B) {
	reqs := lightTurn(20, 10)
	for _, tc := range []struct {
		name  string
		cache func() *kept
	}{{"Body", func() *kept { return nil }}, {"prefix", func() *kept { return &kept{} }}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cache := tc.cache()
				for _, req := range reqs {
					if _, err := bodyWith(req, Config{}, true, cache); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// lightTurn is the requests of a turn of rounds rounds of calls calls
// each: the prompt, then each answer's calls and their results added to
// the one before, as the agent sends them.
func lightTurn(rounds, calls int) []provider.Request {
	req := sampleRequest()
	req.Messages = []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	reqs := []provider.Request{req}
	for r := range rounds - 1 {
		var answer, results []history.Part
		for k := range calls {
			id := fmt.Sprintf("call_%d_%d", r, k)
			answer = append(answer, history.Part{Type: history.ToolCallPart, CallID: id, Name: "noop--run", Input: json.RawMessage(`{}`)})
			results = append(results, history.Part{Type: history.ToolResultPart, CallID: id, Text: "ok"})
		}
		req.Messages = append(slices.Clip(req.Messages),
			history.Message{Role: history.Assistant, Parts: answer},
			history.Message{Role: history.User, Parts: results})
		reqs = append(reqs, req)
	}
	return reqs
}

// lightAnswer is a light round's streamed answer: ten calls of a tool
// with no arguments, as the fake streams it.
func lightAnswer() string {
	calls := make([]providertest.ToolCall, 10)
	for k := range calls {
		calls[k] = providertest.ToolCall{ID: fmt.Sprintf("call_%d", k), Name: "noop--run", Input: `{}`}
	}
	return providertest.ResponsesStream(providertest.Step{ToolCalls: calls, Input: 100, Output: 20}, false)
}

// BenchmarkRead reads a light round's streamed answer (43 events) from
// memory. Run:
//
//	go test ./provider/responses -run '^$' -bench Read -benchmem
func BenchmarkRead(b *testing.B) {
	stream := lightAnswer()
	b.ReportAllocs()
	for b.Loop() {
		a := accumulator{}
		if err := a.read(strings.NewReader(stream)); err != nil || !a.done {
			b.Fatal(err, a.done)
		}
		if r := a.response(); len(r.Message.ToolCalls()) != 10 {
			b.Fatal(r)
		}
	}
}
