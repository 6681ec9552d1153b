package gemini

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
)

// longRequest is a conversation of n messages: answers with a signed tool
// call, and their results of about 400 characters.
func longRequest(n int) provider.Request {
	req := sampleRequest()
	req.Messages = userTurn("start")
	text := strings.Repeat("a line of <output> & more\n", 16)
	for i := 1; len(req.Messages) < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "workspace--read",
				Input: json.RawMessage(`{"path":"a.txt"}`), Wire: "gemini", Signature: sig1}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: text}}})
	}
	return req
}

// BenchmarkBody encodes the body of a 10,000-message conversation, beside
// the Anthropic wire's body of the same conversation (its floor: the
// encoder this one is modelled on). Run:
//
//	go test ./provider/gemini -run '^$' -bench Body -count 6
func BenchmarkBody(b *testing.B) {
	req := longRequest(10000)
	b.Run("gemini", func(b *testing.B) {
		for range b.N {
			if _, err := Body(req, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("anthropic", func(b *testing.B) {
		for range b.N {
			if _, err := anthropic.Body(req, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
