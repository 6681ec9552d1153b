package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// BenchmarkCompleteAt10kMessages compares one whole request of 10,000
// messages (about 6.5 MB) on the first-party wire and on Bedrock, answered
// in process: what Bedrock adds is SigV4's hash of the body (the wire
// writes Bedrock's body itself; the SDK's middleware, which checked it as
// JSON, set anthropic_version and looked up and deleted model and stream,
// each a pass over the body, is no longer in the way).
func BenchmarkCompleteAt10kMessages(b *testing.B) {
	req := providertest.LongRequest(10000)
	client := &http.Client{Transport: providertest.Answering{}}
	first, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", HTTPClient: client, NoStream: true, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	onBedrock, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: true, MaxRetries: -1}, AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
	if err != nil {
		b.Fatal(err)
	}
	providertest.BenchComplete(b, req, providertest.Named{Name: "anthropic", P: first}, providertest.Named{Name: "bedrock", P: onBedrock})
}

// streaming is a transport that answers, in process, with the event
// stream of a light round (ten tool calls), as Bedrock does.
type streaming struct{ frames []byte }

func (s streaming) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, Body: io.NopCloser(bytes.NewReader(s.frames)), Request: r}, nil
}

// BenchmarkCompleteStreamedRound is one streamed light round on Bedrock
// (a short request, an answer of ten tool calls), answered in process:
// "frames" reads the event stream itself (Platform.EventStream). (Its
// "sdk-translation" twin, the SDK's middleware turning the stream into
// server-sent event text first, went with the SDK: issue 34.)
//
//	go test ./provider/bedrock -run '^$' -bench CompleteStreamedRound
func BenchmarkCompleteStreamedRound(b *testing.B) {
	calls := make([]providertest.ToolCall, 10)
	for k := range calls {
		calls[k] = providertest.ToolCall{ID: fmt.Sprintf("call_0_%d", k), Name: "noop--run", Input: `{}`}
	}
	client := &http.Client{Transport: streaming{providertest.BedrockStream(providertest.Step{ToolCalls: calls, Input: 1200, Output: 80})}}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: staticKeys}
	cfg := anthropic.Config{HTTPClient: client, MaxRetries: -1}
	frames, err := New(Config{Config: cfg, AWS: &awsCfg})
	if err != nil {
		b.Fatal(err)
	}
	req := providertest.SampleRequest()
	for _, w := range []struct {
		name string
		p    provider.Provider
	}{{"frames", frames}} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := w.p.Complete(context.Background(), req, nil)
				if err != nil || len(resp.Message.Parts) != 10 {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

// BenchmarkSigV4 is what signing costs Bedrock per request, alone: the
// SHA-256 of the body and SigV4's signature of the request, as the SDK's
// bedrock middleware does for every request (the raw floor of
// agent.BenchmarkPerRoundOverhead replays recorded headers and never
// signs). The body is 12 KiB, about the mean of the per-round benchmark's
// 21 requests. Run:
//
//	go test ./provider/bedrock -run '^$' -bench SigV4 -benchmem
func BenchmarkSigV4(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 12<<10)
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}
	signer := v4.NewSigner()
	b.ReportAllocs()
	for b.Loop() {
		req, err := http.NewRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		sum := sha256.Sum256(body)
		if err := signer.SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
