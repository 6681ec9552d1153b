package anthropic

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	sdkbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"

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
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.Message != "Too many tokens, please wait before trying again." || apiErr.Type() != "throttlingException" {
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

func TestTheSDKsBedrockMiddlewareLeavesAKeptEventStreamAlone(t *testing.T) {
	keys := aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
	})
	for _, keep := range []bool{true, false} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "hello"})
		p, err := NewOn(Platform{Name: "bedrock", Version: "bedrock-2023-05-31", EventStream: keep,
			Options: []option.RequestOption{sdkbedrock.WithConfig(aws.Config{Region: "us-east-1", Credentials: keys})}}, Config{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		body, err := Body(providertest.SampleRequest(), true)
		if err != nil {
			t.Fatal(err)
		}
		var resp *http.Response
		if err := p.client.Post(context.Background(), "v1/messages", nil, &resp, option.WithRequestBody("application/json", body)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := "text/event-stream" // the SDK's translation
		if keep {
			want = keptEventStream
		}
		if got := resp.Header.Get("Content-Type"); got != want {
			t.Errorf("EventStream %v: the answer came as %q, want %q", keep, got, want)
		}
	}
}
