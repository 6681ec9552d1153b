package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

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
// encoder this one is modelled on); "gemini-next-round" is the request
// after one more round of that conversation as a Provider builds it, the
// bytes of the one before kept (prefix.go). Run:
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
	b.Run("gemini-next-round", func(b *testing.B) {
		req := req
		req.CacheKey = "conv"
		c := &keptBodies{}
		if _, err := bodyWith(req, Options{}, c); err != nil {
			b.Fatal(err)
		}
		before := c.prefixes.Kept("conv")
		next := req
		next.Messages = slices.Clip(next.Messages)
		round(&next, 0, 10, "workspace--read")
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			// each iteration the same round's request, on the same kept bytes
			b.StopTimer()
			c.prefixes.Put("conv", leadOf(false), nil, req.Messages[:before.Len()], before.Bytes(), before.Last())
			b.StartTimer()
			if _, err := bodyWith(next, Options{}, c); err != nil {
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

// BenchmarkRead reads one recorded streamed answer of a light tool round
// (testdata/answer.sse: a thought, text in two chunks, ten calls, usage;
// 13 events, 3 KB) into the wire's message, answered in process (no
// socket): "direct" is the wire's reader (internal/sse and encoding/json
// into the few members it reads), "genai" genai's stream of the same
// answer, each chunk through its maps and typed response, read by the same
// accumulator; "complete-direct" and "complete-genai" are a whole
// Complete of a short request each way, the request's encoding and
// sending included. Run:
//
//	go test ./provider/gemini -run '^$' -bench Read -count 6
func BenchmarkRead(b *testing.B) {
	answer := readFixture(b, "answer.sse")
	header := http.Header{"Content-Type": {"text/event-stream"}}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			a := accumulator{}
			resp := &http.Response{Header: header, Body: io.NopCloser(bytes.NewReader(answer))}
			if err := readStream(resp, &a); err != nil || a.stop != "stop" {
				b.Fatal(err)
			}
			_ = a.response()
		}
	})
	b.Run("genai", func(b *testing.B) {
		b.ReportAllocs()
		hc := &http.Client{Transport: &sink{canned: canned{ctype: "text/event-stream", body: answer}}}
		w := newSDKWire(b, hc, Config{APIKey: "k", BaseURL: "http://gemini.invalid"})
		off := false
		config := &genai.GenerateContentConfig{AutomaticContinuation: &off,
			HTTPOptions: &genai.HTTPOptions{ExtrasRequestProvider: func(map[string]any) map[string]any { return nil }}}
		for range b.N {
			a := accumulator{}
			for resp, err := range w.client.Models.GenerateContentStream(context.Background(), "gemini-3-flash-preview", nil, config) {
				if err != nil {
					b.Fatal(err)
				}
				if err := a.add(fromSDK(resp)); err != nil {
					b.Fatal(err)
				}
			}
			if a.stop != "stop" {
				b.Fatal("no finishReason")
			}
			_ = a.response()
		}
	})
	req := provider.Request{Model: "gemini-3-flash-preview", MaxTokens: 1024, Messages: userTurn("go")}
	cfg := Config{APIKey: "k", BaseURL: "http://gemini.invalid", MaxRetries: -1}
	b.Run("complete-direct", func(b *testing.B) {
		b.ReportAllocs()
		c := cfg
		c.HTTPClient = &http.Client{Transport: &sink{canned: canned{ctype: "text/event-stream", body: answer}}}
		p, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			if _, err := p.Complete(context.Background(), req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("complete-genai", func(b *testing.B) {
		b.ReportAllocs()
		w := newSDKWire(b, &http.Client{Transport: &sink{canned: canned{ctype: "text/event-stream", body: answer}}}, cfg)
		for range b.N {
			if _, err := w.complete(context.Background(), req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sink is canned that keeps nothing of the requests: a benchmark's
// transport.
type sink struct{ canned }

func (s *sink) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {s.ctype}},
		Body: io.NopCloser(bytes.NewReader(s.body)), Request: r, ContentLength: int64(len(s.body))}, nil
}
