package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// This file is what the benchmarks of the Anthropic family's platforms
// share: a long request, a transport that answers it in process, and the
// loop that sends it on each wire compared.

// LongRequest is SampleRequest's system prompt and tools with a
// conversation of n messages alternating a tool call and its result of
// about 1 kB (10,000 messages: about 6.5 MB of body).
func LongRequest(n int) provider.Request {
	req := SampleRequest()
	req.Messages = nil
	for i := 0; i < n/2; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: strings.Repeat("a line of output\n", 60)}}})
	}
	return req
}

// Answering is a transport that reads each request whole and answers it
// in process with a short whole Anthropic Messages answer, keeping
// nothing: what a benchmark measures is then the client's work.
type Answering struct{}

// RoundTrip reads r's body and answers.
func (Answering) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(wholeAnswer)), Request: r}, nil
}

// Named is a wire under the name a benchmark reports it by.
type Named struct {
	Name string
	P    provider.Provider
}

// BenchComplete sends req on each of wires in a sub-benchmark of its
// name, failing b at the first error.
func BenchComplete(b *testing.B, req provider.Request, wires ...Named) {
	for _, w := range wires {
		b.Run(w.Name, func(b *testing.B) {
			for b.Loop() {
				if _, err := w.P.Complete(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
