package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// Odd text reaches the API as the same string, decoded once.
func TestOddTextReachesGeminiAsItself(t *testing.T) {
	odd := "q\"b\\ \u2028\u2029 <>& \x00\x01\x1f\x7f \t\r\n é 😀 " + strings.Repeat("x", 100000) + `{"a":1}`
	for _, isErr := range []bool{false, true} {
		req := provider.Request{Model: "gemini-2.5-flash", MaxTokens: 100, Messages: []history.Message{
			{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c", Name: "read", Input: json.RawMessage(`{"x":"<a> & \u2028"}`)}}},
			{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c", Text: odd, IsError: isErr}}},
		}}
		b, err := Body(req, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Contents []struct {
				Parts []struct {
					FunctionResponse *struct {
						Response map[string]string `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		r := body.Contents[1].Parts[0].FunctionResponse.Response
		key := "output"
		if isErr {
			key = "error"
		}
		if r[key] != odd {
			t.Errorf("text changed on the wire (error %v)", isErr)
		}
	}
}

// Servers that reuse call ids (llama.cpp's call_0 each round; the agent
// names cleared items by message for that reason): each response must be
// named by its own round's call, not by the last call with that id.
func TestAReusedCallIDNamesEachGeminiResponseByItsOwnCall(t *testing.T) {
	req := provider.Request{Model: "gemini-2.5-flash", MaxTokens: 100, Messages: []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_0", Name: "workspace--read", Input: json.RawMessage(`{}`)}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_0", Text: "read"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_0", Name: "workspace--write", Input: json.RawMessage(`{}`)}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_0", Text: "written"}}},
	}}
	b, _ := Body(req, Options{})
	if !strings.Contains(string(b), `"name":"workspace--read","response":{"output":"read"}`) {
		t.Errorf("the first round's response is not named by its call:\n%s", b)
	}
}
