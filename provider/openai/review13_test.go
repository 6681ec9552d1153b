package openai

import (
	"strings"
	"testing"
	"testing/iotest"

	"github.com/myelin-run/myelin/provider/providertest"
)

// readAll reads stream through the wire's reader into a fresh accumulator.
func readAll(t *testing.T, stream string, oneByte bool) (*accumulator, string, error) {
	t.Helper()
	var a accumulator
	var streamed strings.Builder
	var r = strings.NewReader(stream)
	var err error
	if oneByte {
		err = a.read(iotest.OneByteReader(r), func(s string) { streamed.WriteString(s) })
	} else {
		err = a.read(r, func(s string) { streamed.WriteString(s) })
	}
	return &a, streamed.String(), err
}

func TestAStreamReadOneByteAtATimeWithCRLFAndNoSpaceReadsAsWhole(t *testing.T) {
	step := providertest.Step{Text: "hello é 😀", Input: 5, Output: 3,
		ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "work", Input: `{"a":"<b>"}`}}}
	whole := providertest.OpenAIStream(step)
	want, _, err := readAll(t, whole, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, stream := range map[string]string{
		"one byte":       whole,
		"crlf":           strings.ReplaceAll(whole, "\n", "\r\n"),
		"data: no space": strings.ReplaceAll(whole, "data: ", "data:"),
	} {
		got, _, err := readAll(t, stream, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if g, w := got.response(), want.response(); g.StopReason != w.StopReason || len(g.Message.Parts) != len(w.Message.Parts) ||
			g.Message.Parts[0].Text != "hello é 😀" || *g.Message.Usage != *w.Message.Usage {
			t.Fatalf("%s: %+v, want %+v", name, g, w)
		}
	}
}

func TestATextDeltaWithASurrogatePairInUTF8FormIsTheCharacterItEncodes(t *testing.T) {
	// U+1F600 as CESU-8: the high surrogate D83D and the low DE00, each
	// written as three bytes (contract §3: the character they encode)
	cesu := "\xed\xa0\xbd\xed\xb8\x80"
	stream := `data: {"choices":[{"index":0,"delta":{"content":"a` + cesu + `b"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	a, streamed, err := readAll(t, stream, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.response().Message.Parts[0].Text; got != "a😀b" {
		t.Errorf("text %q, want %q", got, "a😀b")
	}
	if streamed != "a😀b" {
		t.Errorf("streamed %q, want %q", streamed, "a😀b")
	}
}

func TestAToolCallIndexFarPastTheCallsIsRefusedWithoutAllocatingForIt(t *testing.T) {
	stream := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":2000000000,"id":"x","function":{"name":"n","arguments":"{}"}}]}}]}` + "\n\n"
	a, _, err := readAll(t, stream, false)
	if err == nil || !strings.Contains(err.Error(), "2000000000") {
		t.Fatalf("err %v, calls %d", err, len(a.calls))
	}
}
