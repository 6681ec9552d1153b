package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// conversation is a request of n messages: a prompt, then answers that
// call a tool, each followed by its result of resultLen characters.
func conversation(n, resultLen int) provider.Request {
	req := sampleRequest()
	req.Messages = []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	result := strings.Repeat("a line of output\n", resultLen/17+1)[:resultLen]
	for i := 1; len(req.Messages) < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{
				{Type: history.ToolCallPart, CallID: id, Name: "workspace--read", Input: json.RawMessage(`{"path":"a.txt"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: result}}})
	}
	return req
}

// BenchmarkBody encodes a streamed request with Body, and the same request
// the way the wire did before it encoded its own — Params, then the SDK's
// marshalling of the typed params (its sjson patch of "stream" left out,
// so the SDK's figure is if anything low) — side by side: a light round's
// request (40 messages, 20-byte results) and a long one (10,000 messages,
// 1,000-character results). Run:
//
//	go test ./provider/openai -run '^$' -bench Body -benchmem -count 3
func BenchmarkBody(b *testing.B) {
	for _, size := range []struct {
		name        string
		n, resultLn int
	}{{"light", 40, 20}, {"long", 10000, 1000}} {
		req := conversation(size.n, size.resultLn)
		b.Run(size.name+"/Body", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := Body(req, false, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/SDK", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				p, err := Params(req, false)
				if err != nil {
					b.Fatal(err)
				}
				p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
				if _, err := p.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream reads the streamed answer of a light round — ten tool
// calls, 23 chunks — with read, and with the SDK's stream reader (its
// decoder and apijson), which the wire used before, side by side. Run:
//
//	go test ./provider/openai -run '^$' -bench Stream -benchmem -count 3
func BenchmarkStream(b *testing.B) {
	step := providertest.Step{Input: 100, Output: 20, CacheRead: 50}
	for i := range 10 {
		step.ToolCalls = append(step.ToolCalls, providertest.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "noop", Input: `{"i":1}`})
	}
	stream := providertest.OpenAIStream(step)
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var a accumulator
			if err := a.read(strings.NewReader(stream), nil); err != nil || len(a.calls) != 10 {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(stream))}
			s := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
			n := 0
			for s.Next() {
				c := s.Current()
				for _, ch := range c.Choices {
					n += len(ch.Delta.ToolCalls)
				}
			}
			if s.Err() != nil || n != 20 {
				b.Fatal(s.Err(), n)
			}
		}
	})
}
