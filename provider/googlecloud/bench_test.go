package googlecloud

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
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// longRequest is a conversation of n messages alternating a tool call and
// its result of about 1 kB.
func longRequest(n int) provider.Request {
	req := providertest.SampleRequest()
	req.Messages = nil
	for i := 0; i < n/2; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: strings.Repeat("a line of output\n", 60)}}})
	}
	return req
}

// answering is a transport that reads the request whole and answers with
// a short message, in process: what is measured is the client's work.
type answering struct{}

func (answering) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	const body = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// BenchmarkCompleteAt10kMessages compares one whole request of 10,000
// messages (about 6.5 MB) on the first-party wire and through the Google
// Cloud gateway, answered in process: the gateway's options route the
// request and add a token, and must not touch the body.
func BenchmarkCompleteAt10kMessages(b *testing.B) {
	req := longRequest(10000)
	client := &http.Client{Transport: answering{}}
	first, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", HTTPClient: client, NoStream: true, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	gateway, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: true, MaxRetries: -1}, Project: "p", WorkspaceID: "w", Credentials: staticToken("")})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		p    provider.Provider
	}{{"anthropic", first}, {"google-cloud", gateway}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := w.p.Complete(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
