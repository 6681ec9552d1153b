package providertest

import "fmt"

// Rounds is a Respond that makes every conversation a turn of n rounds:
// while a request holds fewer than n assistant messages it answers with
// one call of tool with input (call ids call_0, call_1, ... in the order
// of the rounds), then with the text "done". It reads each request alone,
// so many conversations can share one fake; it counts the Chat-style
// "assistant" role of Messages, which the Anthropic and OpenAI fakes give.
func Rounds(n int, tool, input string) func(Request) Step {
	return func(r Request) Step {
		answered := 0
		for _, m := range r.Messages {
			if m, ok := m.(map[string]any); ok && m["role"] == "assistant" {
				answered++
			}
		}
		if answered < n {
			return Step{ToolCalls: []ToolCall{{ID: fmt.Sprintf("call_%d", answered), Name: tool, Input: input}}}
		}
		return Step{Text: "done"}
	}
}
