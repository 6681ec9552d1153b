package anthropic

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestBedrocksFramesAreReadAsTheEventsTheyCarry(t *testing.T) {
	for name, step := range map[string]providertest.Step{
		"text and tool calls": {Text: "hello there", ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a"}`}}, Input: 30, CacheRead: 5, Output: 12},
		"thinking":            {Thinking: []providertest.Thinking{{Text: "hmm <&>", Signature: "c2ln"}, {Redacted: "ZGF0YQ=="}}, Text: "ok"},
	} {
		var fromFrames, fromText []string
		got, err := readStream(&frameReader{r: bytes.NewReader(providertest.BedrockStream(step))}, nil, nil, func(s string) { fromFrames = append(fromFrames, s) })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := readStream(sse.NewReader(strings.NewReader(providertest.AnthropicStream(step))), nil, nil, func(s string) { fromText = append(fromText, s) })
		if err != nil {
			t.Fatal(err)
		}
		if mustJSON(got) != mustJSON(want) || strings.Join(fromFrames, "|") != strings.Join(fromText, "|") {
			t.Errorf("%s: from frames\n%s %q\nfrom the same events as text\n%s %q", name, mustJSON(got), fromFrames, mustJSON(want), fromText)
		}
	}
}

func TestAnExceptionFrameIsAnErrorWithItsMessage(t *testing.T) {
	stream := append(providertest.BedrockChunk([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`)),
		providertest.BedrockException("throttlingException", "Too many tokens, please wait before trying again.")...)
	_, err := readStream(&frameReader{r: bytes.NewReader(stream)}, nil, nil, nil)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Message != "Too many tokens, please wait before trying again." || apiErr.Type != "throttlingException" {
		t.Fatalf("err = %v", err)
	}
}

func TestAChunkOfTypeErrorIsAnError(t *testing.T) {
	stream := providertest.BedrockChunk([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	_, err := readStream(&frameReader{r: bytes.NewReader(stream)}, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Overloaded") {
		t.Fatalf("err = %v", err)
	}
}

func TestAFrameCutShortIsAnError(t *testing.T) {
	frames := providertest.BedrockStream(providertest.Step{Text: "hello"})
	_, err := readStream(&frameReader{r: bytes.NewReader(frames[:len(frames)-7])}, nil, nil, nil)
	if err == nil {
		t.Fatal("no error")
	}
}
