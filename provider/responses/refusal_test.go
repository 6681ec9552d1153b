package responses

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The model's own refusal (a message whose content is a "refusal" part)
// and an answer the provider's filter left incomplete are refusals
// (provider.Response.Refused); an answer cut by its output limit is not.
func TestARefusalIsReadAsOneInEitherShape(t *testing.T) {
	refusalItem := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}`
	for _, c := range []struct {
		name, raw, stop, text string
		refused               bool
	}{
		{"the model's refusal", "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":1,\"output_index\":0,\"item\":" + refusalItem + "}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[" + refusalItem + "]}}\n\n",
			"refusal", "I can't help with that.", true},
		{"incomplete for content_filter", "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":1,\"response\":{\"id\":\"r\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"content_filter\"},\"output\":[]}}\n\n",
			"content_filter", "", true},
		{"incomplete for max_output_tokens", "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":1,\"response\":{\"id\":\"r\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[]}}\n\n",
			"max_output_tokens", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewResponses(t, providertest.Step{Raw: c.raw})
			resp, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, p := range resp.Message.Parts {
				text += p.Text
			}
			if resp.StopReason != c.stop || resp.Refused != c.refused || text != c.text {
				t.Fatalf("stop %q, refused %v, text %q; want %q, %v, %q", resp.StopReason, resp.Refused, text, c.stop, c.refused, c.text)
			}
		})
	}
}
