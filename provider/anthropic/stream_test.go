package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// splitBefore is stream cut just before the first line that starts event.
func splitBefore(t *testing.T, stream, event string) (string, string) {
	t.Helper()
	i := strings.Index(stream, "event: "+event+"\n")
	if i < 0 {
		t.Fatalf("no %s event in %s", event, stream)
	}
	return stream[:i], stream[i:]
}

func TestAnErrorEventMidStreamIsAnErrorWithTheProvidersMessage(t *testing.T) {
	head, _ := splitBefore(t, providertest.AnthropicStream(providertest.Step{Text: "hello there"}), "message_delta")
	stream := head + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded right now\"}}\n\n"
	srv := providertest.NewAnthropic(t, providertest.Step{Raw: stream})
	var text strings.Builder
	_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), func(s string) { text.WriteString(s) })
	if err == nil || !strings.Contains(err.Error(), "Overloaded right now") {
		t.Fatalf("err = %v, want the provider's message", err)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Message != "Overloaded right now" || apiErr.Type != "overloaded_error" || apiErr.StatusCode != http.StatusOK {
		t.Fatalf("the SDK's error is not wrapped as its stream made it: %#v", apiErr)
	}
	if _, ok := provider.IsTooLong(err); ok {
		t.Fatalf("an overload is read as too long: %v", err)
	}
	if text.String() != "hello there" {
		t.Fatalf("the text before the error was not streamed: %q", text.String())
	}
}

func TestAnErrorEventThatIsNotAnErrorObjectIsAnErrorQuotingIt(t *testing.T) {
	srv := providertest.NewAnthropic(t, providertest.Step{Raw: "event: error\ndata: {\"type\":\"error\",\"error\":\"nope\n\n"})
	_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), `"error":"nope`) {
		t.Fatalf("err = %v", err)
	}
}

func TestUnknownPingAndUnnamedEventsAreIgnored(t *testing.T) {
	step := providertest.Step{Text: "hello there", ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "workspace--read", Input: `{"path":"a"}`}}}
	plain := providertest.AnthropicStream(step)
	head, tail := splitBefore(t, plain, "content_block_delta")
	noisy := head +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_novelty\ndata: {\"type\":\"content_block_novelty\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"not this\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"nor this\"}}\n\n" +
		"event: content_block_delta\ndata:\n\n" +
		": a comment\n\n" +
		tail
	var want, got provider.Response
	for i, stream := range []string{plain, noisy} {
		srv := providertest.NewAnthropic(t, providertest.Step{Raw: stream})
		resp, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if i == 0 {
			want = resp
		} else {
			got = resp
		}
	}
	if mustJSON(got) != mustJSON(want) || len(want.Message.Parts) != 2 {
		t.Fatalf("with unknown events\n got %s\nwant %s", mustJSON(got), mustJSON(want))
	}
}

func TestADeltaForABlockThatNeverStartedIsAnError(t *testing.T) {
	head, tail := splitBefore(t, providertest.AnthropicStream(providertest.Step{Text: "hello there"}), "message_delta")
	for _, index := range []int{1, 5, -1} {
		stream := head + fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", index) + tail
		srv := providertest.NewAnthropic(t, providertest.Step{Raw: stream})
		_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
		want := fmt.Sprintf("anthropic: malformed stream: a delta for content block %d, which never started", index)
		if err == nil || err.Error() != want {
			t.Errorf("index %d: err = %v, want %q", index, err, want)
		}
	}
}

func TestAnEventThatIsNotJSONNamesTheEventAndQuotesIt(t *testing.T) {
	srv := providertest.NewAnthropic(t, providertest.Step{Raw: "event: message_start\ndata: {not json\n\n"})
	_, err := newProvider(t, srv, false).Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "message_start") || !strings.Contains(err.Error(), "{not json") {
		t.Fatalf("err = %v", err)
	}
}

// lightRound is the stream of a light round of the overhead benchmark:
// ten tool calls.
func lightRound() []byte {
	return []byte(providertest.AnthropicStream(lightStep()))
}

// lightStep is the answer of a light round.
func lightStep() providertest.Step {
	calls := make([]providertest.ToolCall, 10)
	for k := range calls {
		calls[k] = providertest.ToolCall{ID: fmt.Sprintf("call_0_%d", k), Name: "noop--run", Input: `{}`}
	}
	return providertest.Step{ToolCalls: calls, Input: 1200, Output: 80}
}

// sdkRead reads a stream as the wire did before stream.go, through the
// SDK's ssestream and its union type, touching the fields the accumulator
// read, for BenchmarkReadStream to compare with.
func sdkRead(data []byte) (int, error) {
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
	stream := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	defer stream.Close()
	n := 0
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			n += int(ev.Message.Usage.InputTokens)
		case "content_block_start":
			n += len(ev.ContentBlock.Type) + len(ev.ContentBlock.ID) + len(ev.ContentBlock.Name)
		case "content_block_delta":
			n += len(ev.Delta.PartialJSON) + len(ev.Delta.Text)
		case "message_delta":
			n += int(ev.Usage.OutputTokens) + len(ev.Delta.StopReason)
		}
	}
	return n, stream.Err()
}

// BenchmarkReadStream reads the stream of a light round (ten tool calls)
// with this wire's reader and with the SDK's stream, over the same bytes
// in memory: the ratio is what stream.go saves per answer.
//
//	go test ./provider/anthropic -run '^$' -bench ReadStream
func BenchmarkReadStream(b *testing.B) {
	data := lightRound()
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := readStream(sse.NewReader(bytes.NewReader(data)), nil, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// borrowed is the reader as the wire uses it: taken from the pool and
	// given back, so that what is measured is reading, not the 32 KiB
	// buffer a new reader allocates (which "reader" keeps, to compare
	// with earlier runs).
	b.Run("borrowed", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := sse.Borrow(bytes.NewReader(data))
			_, err := readStream(r, nil, nil, nil)
			r.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	// frames is the same answer as Bedrock sends it, AWS event stream
	// frames, read as its wire does.
	frames := providertest.BedrockStream(lightStep())
	b.Run("frames", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(frames)))
		for b.Loop() {
			r := borrowFrames(bytes.NewReader(frames))
			_, err := readStream(r, nil, nil, nil)
			r.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := sdkRead(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestBothReadersOfTheBenchmarkReadItsRound(t *testing.T) {
	data := lightRound()
	resp, err := readStream(sse.NewReader(bytes.NewReader(data)), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdkRead(data); err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.Parts) != 10 || resp.StopReason != "tool_use" || resp.Message.Usage.Input != 1200 || resp.Message.Usage.Output != 80 {
		t.Fatalf("read %s", mustJSON(resp))
	}
}

// streaming is a transport that answers, in process, with a stream.
type streaming struct{ stream []byte }

func (s streaming) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(s.stream)), Request: r}, nil
}

// BenchmarkCompleteStreamedRound is one whole streamed light round on the
// first-party wire — the request built and sent through the SDK, the
// answer of ten tool calls read — answered in process, so that what is
// measured is the wire's own work (run it on two checkouts for a before
// and after).
//
//	go test ./provider/anthropic -run '^$' -bench CompleteStreamedRound
func BenchmarkCompleteStreamedRound(b *testing.B) {
	p, err := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: streaming{lightRound()}}, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	req := providertest.SampleRequest()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Complete(context.Background(), req, nil)
		if err != nil || len(resp.Message.Parts) != 10 {
			b.Fatal(resp, err)
		}
	}
}

// answers are streams of every kind of block, for the tests of a reading
// reused from answer to answer.
func answers() map[string][]byte {
	long := `{"path":"` + strings.Repeat("a/b", 4000) + `", "n": 1}`
	return map[string][]byte{
		"light round": lightRound(),
		"everything": []byte(providertest.AnthropicStream(providertest.Step{
			Thinking:  []providertest.Thinking{{Text: "hmm, é", Signature: "c2ln"}, {Redacted: "ZGF0YQ=="}},
			Text:      "some text \"quoted\"",
			ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a <b> \"c\""}`}, {ID: "toolu_2", Name: "x", Input: ` [1] `}, {ID: "toolu_3", Name: "y", Input: ""}},
			Input:     10, Output: 20, CacheRead: 3, CacheWrite: 4,
		})),
		"text":       []byte(providertest.AnthropicStream(providertest.Step{Text: "just text", Refuse: true})),
		"long input": []byte(providertest.AnthropicStream(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_9", Name: "big", Input: long}, {ID: "toolu_10", Name: "small", Input: `{}`}}})),
	}
}

func TestAReadingReusedForAnotherAnswerReadsItAsANewOneAndKeepsNothingOfTheLast(t *testing.T) {
	streams := answers()
	fresh := map[string]string{}
	for name, stream := range streams {
		resp, err := new(reading).read(sse.NewReader(bytes.NewReader(stream)), nil, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fresh[name] = mustJSON(resp)
	}
	rd := new(reading)
	type read struct {
		name string
		resp provider.Response
	}
	var reads []read
	for _, name := range []string{"everything", "light round", "long input", "text", "everything", "text", "long input", "light round", "everything"} {
		resp, err := rd.read(sse.NewReader(bytes.NewReader(streams[name])), nil, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := mustJSON(resp); got != fresh[name] {
			t.Fatalf("%s after %d answers:\n got %s\nwant %s", name, len(reads), got, fresh[name])
		}
		reads = append(reads, read{name, resp})
		rd.empty()
	}
	// what later answers were read into shares nothing with an earlier
	// answer's Response
	for i, r := range reads {
		if got := mustJSON(r.resp); got != fresh[r.name] {
			t.Fatalf("answer %d, %s, changed when later ones were read:\n got %s\nwant %s", i, r.name, got, fresh[r.name])
		}
	}
}

func TestAReadingThatGrewPastWhatIsKeptIsNotKept(t *testing.T) {
	rd := new(reading)
	if _, err := rd.read(sse.NewReader(bytes.NewReader(answers()["light round"])), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !rd.empty() {
		t.Fatal("a light round's reading is not kept")
	}
	huge := providertest.AnthropicStream(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "t", Name: "n", Input: `{"a":"` + strings.Repeat("x", maxKeptReading) + `"}`}}})
	if _, err := rd.read(sse.NewReader(strings.NewReader(huge)), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if rd.empty() {
		t.Fatalf("a reading that holds an input of %d bytes is kept", maxKeptReading)
	}
}

func TestEachToolCallsInputIsItsOwnThoughTheyShareABuffer(t *testing.T) {
	resp, err := readStream(sse.NewReader(bytes.NewReader(answers()["long input"])), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, second := resp.Message.Parts[0], resp.Message.Parts[1]
	_ = append(first.Input, 'x')
	if string(second.Input) != `{}` || second.CallID != "toolu_10" || second.Name != "small" {
		t.Fatalf("the second call after an append to the first's input: %+v", second)
	}
}

// leastAllocs is the least of three testing.AllocsPerRun of f: it counts
// every allocation of the process, and another goroutine of the test
// binary may allocate during one of them.
func leastAllocs(f func()) float64 {
	n := testing.AllocsPerRun(20, f)
	for range 2 {
		n = min(n, testing.AllocsPerRun(20, f))
	}
	return n
}

// roundOf is the answer of a round of n calls of a no-op tool, as text
// and as Bedrock's frames.
func roundOf(n int) (text, frames []byte) {
	calls := make([]providertest.ToolCall, n)
	for k := range calls {
		calls[k] = providertest.ToolCall{ID: fmt.Sprintf("call_%d", k), Name: "noop--run", Input: `{}`}
	}
	step := providertest.Step{ToolCalls: calls, Input: 1200, Output: 80}
	return []byte(providertest.AnthropicStream(step)), providertest.BedrockStream(step)
}

// TestReadingAnAnswerAllocatesTheSameWhateverNumberOfCalls pins what a
// warm reader allocates for an answer of tool calls: its Parts, its usage,
// one string for the calls' ids and names and one buffer for their
// inputs, however many calls, whether the answer comes as text or as
// Bedrock's frames.
func TestReadingAnAnswerAllocatesTheSameWhateverNumberOfCalls(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops a share of what it is given (raceDetector)")
	}
	for _, form := range []string{"text", "frames"} {
		t.Run(form, func(t *testing.T) {
			var per [2]float64
			for i, n := range []int{10, 40} {
				text, frames := roundOf(n)
				src := bytes.NewReader(text)
				var r events = sse.NewReader(src)
				if form == "frames" {
					src = bytes.NewReader(frames)
					r = &frameReader{r: src}
				}
				rd := new(reading)
				read := func() {
					src.Seek(0, io.SeekStart)
					switch r := r.(type) {
					case *sse.Reader:
						r.Reset(src)
					case *frameReader:
						*r = frameReader{r: src, frame: r.frame, data: r.data}
					}
					resp, err := rd.read(r, nil, nil, nil)
					if err != nil || len(resp.Message.Parts) != n {
						t.Fatal(resp, err)
					}
					rd.empty()
				}
				read() // warm: the buffers and the blocks
				per[i] = leastAllocs(read)
			}
			if per[0] != 4 || per[1] != 4 {
				t.Fatalf("reading an answer of 10 calls allocated %v times, of 40 calls %v times; want 4 each", per[0], per[1])
			}
		})
	}
}
