package mcpfixtures

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// argsPrompt is the prompt whose arguments complete (Complete).
const argsPrompt = "test_prompt_with_arguments"

func registerPrompts(s *sdk.Server) {
	s.AddPrompt(&sdk.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments (conformance fixture)"},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return messages(&sdk.TextContent{Text: simplePromptText}), nil
		})
	s.AddPrompt(&sdk.Prompt{Name: argsPrompt, Description: "A prompt that quotes its two arguments (conformance fixture)",
		Arguments: []*sdk.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			args, err := required(req, "arg1", "arg2")
			if err != nil {
				return nil, err
			}
			return messages(&sdk.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args[0], args[1])}), nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource (conformance fixture)",
		Arguments: []*sdk.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			args, err := required(req, "resourceUri")
			if err != nil {
				return nil, err
			}
			return messages(
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: args[0], MIMEType: "text/plain", Text: promptResourceText}},
				&sdk.TextContent{Text: promptResourceAsk}), nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image (conformance fixture)"},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return messages(&sdk.ImageContent{Data: redPixelPNG(), MIMEType: "image/png"}, &sdk.TextContent{Text: promptImageAsk}), nil
		})
}

// messages is a prompt of one user message for each content.
func messages(content ...sdk.Content) *sdk.GetPromptResult {
	r := &sdk.GetPromptResult{}
	for _, c := range content {
		r.Messages = append(r.Messages, &sdk.PromptMessage{Role: "user", Content: c})
	}
	return r
}

// required are the values of the named arguments of req, or an invalid
// params error naming those missing.
func required(req *sdk.GetPromptRequest, names ...string) ([]string, error) {
	var vals, missing []string
	for _, n := range names {
		v, ok := req.Params.Arguments[n]
		if !ok {
			missing = append(missing, n)
		}
		vals = append(vals, v)
	}
	if len(missing) > 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("prompt %s needs the arguments %s; missing: %s", req.Params.Name, strings.Join(names, ", "), strings.Join(missing, ", "))}
	}
	return vals, nil
}
