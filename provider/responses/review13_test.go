package responses

import (
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/myelin-run/myelin/provider/providertest"
)

// cesu is U+1F600 as CESU-8 writes it: its two surrogates, three bytes each.
const cesu = "\xed\xa0\xbd\xed\xb8\x80"

func TestATextDeltaWithASurrogatePairInUTF8FormIsTheCharacterItEncodes(t *testing.T) {
	for name, done := range map[string]string{
		"from the deltas":    `{"type":"response.completed","response":{"status":"completed","output":[]}}`,
		"from the item done": `{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"a` + cesu + `b"}]}]}}`,
	} {
		stream := "data: " + `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a` + cesu + `b"}` + "\n\n" +
			"data: " + done + "\n\n"
		var streamed strings.Builder
		a := accumulator{onText: func(s string) { streamed.WriteString(s) }}
		if err := a.read(iotest.OneByteReader(strings.NewReader(stream))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := a.response().Message.Parts; len(p) != 1 || p[0].Text != "a😀b" || streamed.String() != "a😀b" {
			t.Fatalf("%s: parts %+v, streamed %q, want %q", name, p, streamed.String(), "a😀b")
		}
	}
}

func TestAStreamReadOneByteAtATimeWithCRLFAndNoSpaceReadsAsWhole(t *testing.T) {
	step := providertest.Step{Text: "hello é 😀", Input: 5, CacheRead: 2, Output: 3,
		ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "work", Input: `{"a":"<b>"}`}}}
	whole := providertest.ResponsesStream(step, true)
	var w accumulator
	if err := w.read(strings.NewReader(whole)); err != nil {
		t.Fatal(err)
	}
	want := w.response()
	for name, stream := range map[string]string{
		"one byte":       whole,
		"crlf":           strings.ReplaceAll(whole, "\n", "\r\n"),
		"data: no space": strings.ReplaceAll(strings.ReplaceAll(whole, "data: ", "data:"), "event: ", "event:"),
	} {
		var a accumulator
		if err := a.read(iotest.OneByteReader(strings.NewReader(stream))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := a.response(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v\nwant %+v", name, got, want)
		}
	}
}
