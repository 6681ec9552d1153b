package responses

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sseEvent is one event of a Responses stream, as the API writes it.
func sseEvent(data string) string {
	typ := data[strings.Index(data, `"type":"`)+8:]
	typ = typ[:strings.IndexByte(typ, '"')]
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

// phasedStream is a gpt-5.x answer as recorded: a commentary message, a
// call, then (in the response's output) the same items whole.
var phasedStream = sseEvent(`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"phase":"commentary","role":"assistant"}}`) +
	sseEvent(`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Let me look."}`) +
	sseEvent(`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Let me look."}],"phase":"commentary","role":"assistant"}}`) +
	sseEvent(`{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"workspace--read"}}`) +
	sseEvent(`{"type":"response.output_item.done","sequence_number":5,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\":\"a.txt\"}","call_id":"call_1","name":"workspace--read"}}`) +
	sseEvent(`{"type":"response.completed","sequence_number":6,"response":{"id":"r","status":"completed","output":[`+
		`{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Let me look."}],"phase":"commentary","role":"assistant"},`+
		`{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\":\"a.txt\"}","call_id":"call_1","name":"workspace--read"}],`+
		`"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}}}`)

func TestAMessagesPhaseIsStoredAndSentBackWithIt(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Raw: phasedStream})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := resp.Message.Parts
	if len(parts) != 2 || parts[0].Text != "Let me look." {
		t.Fatalf("parts %+v", parts)
	}
	if parts[0].Wire != Wire || string(parts[0].Raw) != `"commentary"` {
		t.Fatalf("the text part kept wire %q raw %s; want %q and the phase", parts[0].Wire, parts[0].Raw, Wire)
	}
	req := sampleRequest()
	req.Messages = append(req.Messages, resp.Message,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "x"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{Text("Done.", "final_answer")}})
	b := body(t, req, Config{}, false)
	for _, want := range []string{
		`{"type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"Let me look."}]},{"type":"function_call","call_id":"call_1"`,
		`{"type":"message","role":"assistant","phase":"final_answer","content":[{"type":"output_text","text":"Done."}]}`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the body lacks %s:\n%s", want, b)
		}
	}
}

func TestTextsOfTwoPhasesGoInTwoMessagesAndUnphasedTextsStayAsBefore(t *testing.T) {
	req := sampleRequest()
	req.Messages = []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}},
		{Role: history.Assistant, Parts: []history.Part{
			Text("Working.", "commentary"), Text("Still.", "commentary"), Text("Answer.", "final_answer"),
			{Type: history.TextPart, Text: "plain"},
			// another wire's Raw, or one that is not a plain JSON string, is not a phase
			{Type: history.TextPart, Text: "gem", Wire: "gemini", Raw: []byte(`"commentary"`)},
			{Type: history.TextPart, Text: "odd", Wire: Wire, Raw: []byte(`"a\"},{\"x"`)},
		}},
	}
	b := body(t, req, Config{}, false)
	want := `{"type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"Working."},{"type":"output_text","text":"Still."}]},` +
		`{"type":"message","role":"assistant","phase":"final_answer","content":[{"type":"output_text","text":"Answer."}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"plain"},{"type":"output_text","text":"gem"},{"type":"output_text","text":"odd"}]}]`
	if !bytes.Contains(b, []byte(want)) {
		t.Fatalf("sent %s\nwant %s", b, want)
	}
}

func TestAStreamNumberedOtherwiseThanTheOutputListIsNotDoubled(t *testing.T) {
	// The stream numbers its one message 1, the response's output list
	// has it at 0: the answer is the list's, once.
	raw := sseEvent(`{"type":"response.output_item.added","sequence_number":1,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`) +
		sseEvent(`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Only once."}`) +
		sseEvent(`{"type":"response.output_item.done","sequence_number":3,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Only once."}],"role":"assistant"}}`) +
		sseEvent(`{"type":"response.completed","sequence_number":4,"response":{"id":"r","status":"completed","output":[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Only once."}],"role":"assistant"}],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}}}`)
	srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.Parts) != 1 || resp.Message.Parts[0].Text != "Only once." {
		t.Fatalf("parts %+v; want the one text once", resp.Message.Parts)
	}
}
