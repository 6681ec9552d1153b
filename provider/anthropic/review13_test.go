package anthropic

import (
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/myelin-run/myelin/internal/sse"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestATextDeltaWithASurrogatePairInUTF8FormIsTheCharacterItEncodes(t *testing.T) {
	cesu := "\xed\xa0\xbd\xed\xb8\x80" // U+1F600 as CESU-8: its two surrogates, three bytes each
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a" + cesu + "b\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\\n" + cesu + "\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	var streamed strings.Builder
	resp, err := readStream(sse.NewReader(iotest.OneByteReader(strings.NewReader(stream))), nil, func(s string) { streamed.WriteString(s) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Message.Parts; len(p) != 1 || p[0].Text != "a😀b\n😀" || streamed.String() != "a😀b\n😀" {
		t.Fatalf("parts %+v, streamed %q", p, streamed.String())
	}
}

func TestAStreamReadOneByteAtATimeWithCRLFAndNoSpaceReadsAsWhole(t *testing.T) {
	step := providertest.Step{Text: "hello é 😀", Input: 5, CacheRead: 2, Output: 3,
		Thinking:  []providertest.Thinking{{Text: "hmm", Signature: "c2ln"}},
		ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "work", Input: `{"a":"<b>"}`}}}
	whole := providertest.AnthropicStream(step)
	want, err := readStream(sse.NewReader(strings.NewReader(whole)), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, stream := range map[string]string{
		"one byte":       whole,
		"crlf":           strings.ReplaceAll(whole, "\n", "\r\n"),
		"data: no space": strings.ReplaceAll(strings.ReplaceAll(whole, "data: ", "data:"), "event: ", "event:"),
	} {
		got, err := readStream(sse.NewReader(iotest.OneByteReader(strings.NewReader(stream))), nil, nil, nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, %v\nwant %+v", name, got, err, want)
		}
	}
}
