package responses

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestCompleteSendsBodysBytesUnpatched(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewResponses(t, providertest.Step{Text: "ok"})
		cfg := Config{NoStream: noStream, ReasoningEffort: "low"}
		req := longRequest(7)
		req.CacheKey = "conv-1"
		if _, err := newProvider(t, srv, cfg).Complete(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		want, err := Body(req, cfg, !noStream)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0]; string(got) != string(want) {
			t.Fatalf("no stream %v: sent\n%s\nwant\n%s", noStream, got, want)
		}
	}
}

func TestEventsTheWireDoesNotReadArePassedOver(t *testing.T) {
	stream := providertest.ResponsesStream(providertest.Step{Text: "ok"}, false)
	odd := "event: response.some_new_thing\ndata: {\"type\":\"response.some_new_thing\",\"delta\":{\"an\":\"object\"},\"item\":[1]}\n\n" +
		": a comment\n\n"
	srv := providertest.NewResponses(t, providertest.Step{Raw: odd + stream})
	resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err != nil || len(resp.Message.Parts) != 1 || resp.Message.Parts[0].Text != "ok" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

func TestAnEventOfTheWireThatIsMalformedIsAnError(t *testing.T) {
	bad := "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":7}}\n\n"
	srv := providertest.NewResponses(t, providertest.Step{Raw: bad + providertest.ResponsesStream(providertest.Step{Text: "ok"}, false)})
	_, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "malformed event") || !strings.Contains(err.Error(), "response.output_item.added") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnErrorObjectInTheStreamKeepsTheProvidersMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		events  string
		tooLong bool
	}{
		"too long, before output": {`data: {"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":"input"}}` + "\n\n", true},
		"too long, after output": {`data: {"type":"response.output_text.delta","output_index":0,"delta":"par"}` + "\n\n" +
			`data: {"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}` + "\n\n", false},
		"another": {`data: {"type":"error","error":{"type":"server_error","code":"server_error","message":"Your input exceeds nothing: overloaded"}}` + "\n\n", false},
	} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewResponses(t, providertest.Step{Raw: tc.events})
			_, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
			if err == nil || !strings.Contains(err.Error(), "openai-responses: the stream ended with an error: {") || !strings.Contains(err.Error(), "Your input exceeds") {
				t.Fatalf("err = %v", err)
			}
			var tl *provider.TooLongError
			if errors.As(err, &tl) != tc.tooLong {
				t.Fatalf("too long %v: %v", !tc.tooLong, err)
			}
		})
	}
}
