package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// The SDK's typed request for a provider.Request, as the wire built it
// before it encoded its own bodies: the reference Body is held to
// (TestBodyIsWhatTheSDKSendsForParams), never sent by the wire. It was
// exported (openai.Params) until the binary stopped linking openai-go.

// Params builds the SDK's typed request for req: what Body encodes, and
// what TestBodyIsWhatTheSDKSendsForParams holds Body to (Complete sends
// Body's bytes, never these params). The
// answer's limit goes as max_completion_tokens, OpenAI's name (its
// reasoning models refuse max_tokens), or, with legacyMaxTokens, as
// max_tokens, the name the servers that copy the API (OpenRouter, Ollama,
// vLLM, the llama.cpp server) have long known.
func Params(req provider.Request, legacyMaxTokens bool) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if limit := param.NewOpt(int64(max(1, req.MaxTokens))); legacyMaxTokens {
		p.MaxTokens = limit
	} else {
		p.MaxCompletionTokens = limit
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return p, fmt.Errorf("tool %s: its input schema is not a JSON object: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: param.NewOpt(t.Description), Parameters: schema,
		}))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		if m.IsRecord() {
			continue // a stored decision, never sent: as if absent
		}
		p.Messages = append(p.Messages, messages(m)...)
	}
	return p, nil
}

// messages turns one stored message into the wire's messages.
func messages(m history.Message) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	if m.Role == history.Assistant {
		var a sdk.ChatCompletionAssistantMessageParam
		var text strings.Builder
		for _, part := range m.Parts {
			switch part.Type {
			case history.TextPart:
				text.WriteString(part.Text)
			case history.ToolCallPart:
				args := string(part.Input)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: part.CallID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: part.Name, Arguments: args},
				}})
			}
		}
		if text.Len() > 0 {
			a.Content.OfString = param.NewOpt(text.String())
		}
		if text.Len() == 0 && len(a.ToolCalls) == 0 {
			return nil // an empty answer: the API takes no empty message
		}
		return append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
	}
	var images []sdk.ChatCompletionContentPartUnionParam
	for _, part := range m.Parts {
		switch part.Type {
		case history.TextPart:
			out = append(out, sdk.UserMessage(part.Text))
		case history.ToolResultPart:
			out = append(out, sdk.ToolMessage(part.Text, part.CallID))
			for i, img := range part.Images {
				images = append(images,
					sdk.TextContentPart(fmt.Sprintf("[image %d of tool call %s]", i+1, part.CallID)),
					sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
						URL: "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
					}))
			}
		}
	}
	if len(images) > 0 {
		out = append(out, sdk.UserMessage(images))
	}
	return out
}
