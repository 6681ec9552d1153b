package agent

import (
	"strings"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/provider/providertest"
)

func init() {
	testWires["openai"] = testWire{
		server: providertest.NewOpenAI,
		provider: func(url string) (provider.Provider, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		},
		results: openAIResults,
		model:   "gpt-test",
	}
}

// openAIResults are the tool messages after the request's last assistant
// message, with the images of the user message that follows them.
func openAIResults(req map[string]any) []sentResult {
	msgs := req["messages"].([]any)
	var out []sentResult
	last := 0
	for j, m := range msgs {
		if m.(map[string]any)["role"] == "assistant" {
			last = j
		}
	}
	for _, x := range msgs[last+1:] {
		m := x.(map[string]any)
		switch m["role"] {
		case "tool":
			out = append(out, sentResult{callID: m["tool_call_id"].(string), text: m["content"].(string)})
		case "user":
			if parts, ok := m["content"].([]any); ok {
				for _, p := range parts {
					if pm := p.(map[string]any); pm["type"] == "image_url" {
						url := pm["image_url"].(map[string]any)["url"].(string)
						out[len(out)-1].images = append(out[len(out)-1].images, strings.TrimPrefix(url, "data:image/png;base64,"))
					}
				}
			}
		}
	}
	return out
}
