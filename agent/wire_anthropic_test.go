package agent

import (
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

func init() {
	testWires["anthropic"] = testWire{
		server: providertest.NewAnthropic,
		provider: func(url string) (provider.Provider, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		},
		results: anthropicResults,
		model:   "claude-test",
	}
}

// anthropicResults are the tool_result blocks of the request's last message.
func anthropicResults(req map[string]any) []sentResult {
	msgs := req["messages"].([]any)
	var out []sentResult
	for _, b := range msgs[len(msgs)-1].(map[string]any)["content"].([]any) {
		m := b.(map[string]any)
		if m["type"] != "tool_result" {
			continue
		}
		sr := sentResult{callID: m["tool_use_id"].(string), isError: m["is_error"] == true}
		switch c := m["content"].(type) {
		case string:
			sr.text = c
		case []any:
			for _, x := range c {
				blk := x.(map[string]any)
				if blk["type"] == "text" {
					sr.text = blk["text"].(string)
				} else if blk["type"] == "image" {
					sr.images = append(sr.images, blk["source"].(map[string]any)["data"].(string))
				}
			}
		}
		out = append(out, sr)
	}
	return out
}
