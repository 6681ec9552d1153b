package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asker serves, over streamable HTTP in process, a server whose tools ask
// the client things during their calls: `elicit` asks for a form (name, a
// string with the default "Ann"; age, a required integer; color, red or
// blue with the default blue; verified, a boolean with the default true)
// and returns the action and content it got (`accept {"age":30,...}`);
// `visit` asks for a URL visit and returns the action; `sample` asks the
// client's model to complete "say hi" and returns `<model>: <text>`;
// `work` sends three progress notifications; `say` a log message;
// `grow` adds the tool `grown` (so the server sends tools/list_changed).
func Asker() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	type none struct{}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "elicit", Description: "Asks who you are."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":     map[string]any{"type": "string", "default": "Ann"},
				"age":      map[string]any{"type": "integer", "description": "years"},
				"color":    map[string]any{"type": "string", "enum": []string{"red", "blue"}, "default": "blue"},
				"verified": map[string]any{"type": "boolean", "default": true},
			},
			"required": []string{"age"},
		}})
		if err != nil {
			return nil, nil, err
		}
		out, _ := json.Marshal(res.Content)
		return text(res.Action + " " + string(out)), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "visit", Description: "Asks you to sign in on a page."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.test/signin", ElicitationID: "e1"})
		if err != nil {
			return nil, nil, err
		}
		return text(res.Action), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "sample", Description: "Asks your model to say hi."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 100, SystemPrompt: "be brief",
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "say hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		t, _ := res.Content.(*sdk.TextContent)
		if t == nil {
			return text(res.Model + ": (no text)"), nil, nil
		}
		return text(res.Model + ": " + t.Text), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "work", Description: "Reports progress in three steps."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		if token == nil {
			return text("no progress token"), nil, nil
		}
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, nil, err
			}
		}
		return text("worked"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "say", Description: "Sends a log message."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "disk", Data: "almost full"})
		return text("said"), nil, err
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "grow", Description: "Adds the tool grown."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(srv, &sdk.Tool{Name: "grown", Description: "Was added by grow."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return text("new"), nil, nil
		})
		return text("grew"), nil, nil
	})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
}
