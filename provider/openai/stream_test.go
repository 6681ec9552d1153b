package openai

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestAnErrorInTheStreamKeepsTheProvidersMessage(t *testing.T) {
	head := `data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}` + "\n\n"
	tooLongObj := `{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).","type":"invalid_request_error","code":"context_length_exceeded"}`
	for name, tc := range map[string]struct {
		stream  string
		msg     string
		tooLong *provider.TooLongError
	}{
		"an error object before any output, too long": {
			stream: "data: {\"error\":" + tooLongObj + "}\n\n", msg: "maximum context length is 8192 tokens",
			tooLong: &provider.TooLongError{Tokens: 8000, Output: 1000, Limit: 8192},
		},
		"an error object after output": {
			stream: head + "data: {\"error\":" + tooLongObj + "}\n\n", msg: "maximum context length is 8192 tokens",
		},
		"another error object": {
			stream: "data: {\"error\":{\"message\":\"overloaded, try later\",\"type\":\"server_error\"}}\n\n", msg: "overloaded, try later",
		},
		"an error at the top of the chunk (vLLM)": {
			stream: "data: {\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
			msg:    "maximum context length is 4096", tooLong: &provider.TooLongError{Tokens: 4000, Output: 1000, Limit: 4096},
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewOpenAI(t, providertest.Step{Raw: tc.stream})
			_, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "openai: the stream ended with an error: {") {
				t.Fatalf("err = %v", err)
			}
			var tl *provider.TooLongError
			if got := errors.As(err, &tl); got != (tc.tooLong != nil) {
				t.Fatalf("too long %v: %v", got, err)
			}
			if tl != nil && (tl.Tokens != tc.tooLong.Tokens || tl.Output != tc.tooLong.Output || tl.Limit != tc.tooLong.Limit) {
				t.Fatalf("too long %+v, want %+v", tl, tc.tooLong)
			}
		})
	}
}

func TestDoneEndsTheStream(t *testing.T) {
	stream := providertest.OpenAIStream(providertest.Step{Text: "ok"}) + "data: {not json, never read}\n\n"
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: stream})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || resp.Message.Parts[0].Text != "ok" || resp.StopReason != "stop" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

func TestToolCallsStreamedInPiecesAreJoinedByIndex(t *testing.T) {
	chunk := func(delta string) string {
		return `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	stream := chunk(`{"role":"assistant","content":null}`) +
		chunk(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"work","arguments":""}}]}`) +
		chunk(`{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"other","arguments":"{\"y\""}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"space--read","arguments":"{\"x\":"}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}},{"index":1,"function":{"arguments":":2}"}}]}`) +
		`data: {"choices":[{"index":1,"delta":{"content":"another choice"}},{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":20}}}` + "\n\ndata: [DONE]\n\n"
	srv := providertest.NewOpenAI(t, providertest.Step{Raw: stream})
	resp, err := newProvider(t, srv, false).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Message.Parts
	if len(p) != 2 || p[0].CallID != "a" || p[0].Name != "workspace--read" || string(p[0].Input) != `{"x":1}` ||
		p[1].CallID != "b" || p[1].Name != "other" || string(p[1].Input) != `{"y":2}` || resp.StopReason != "tool_calls" {
		t.Fatalf("parts %+v, stop %q", p, resp.StopReason)
	}
	if u := *resp.Message.Usage; u.Input != 10 || u.CacheRead != 20 || u.Output != 7 {
		t.Fatalf("usage %+v", u)
	}
}
