package mcpfixtures

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stringArg is the string argument name of a call, or a tool error
// saying it is missing.
func stringArg(req *sdk.CallToolRequest, name string) (string, *sdk.CallToolResult) {
	var args map[string]any
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return "", failed("%s: the arguments are not a JSON object: %v", req.Params.Name, err)
		}
	}
	v, ok := args[name].(string)
	if !ok {
		return "", failed("%s needs the string argument %q, e.g. {%q: \"...\"}", req.Params.Name, name, name)
	}
	return v, nil
}

// sampling asks the client's model to answer the prompt argument
// (sampling/createMessage) and returns its answer.
func sampling(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	prompt, bad := stringArg(req, "prompt")
	if bad != nil {
		return bad, nil
	}
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil {
		return failed("test_sampling needs a client that supports sampling: this one declared no sampling capability on initialize"), nil
	}
	res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{
		Messages:  []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: prompt}}},
		MaxTokens: 100,
	})
	if err != nil {
		return failed("sampling/createMessage failed: %v", err), nil
	}
	answer := fmt.Sprintf("(%T content)", res.Content)
	if t, ok := res.Content.(*sdk.TextContent); ok {
		answer = t.Text
	}
	return text("LLM response: " + answer), nil
}

// elicitation asks the client's user, with the message argument, for a
// username and an email (elicitation/create) and returns the answer.
func elicitation(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	msg, bad := stringArg(req, "message")
	if bad != nil {
		return bad, nil
	}
	res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: msg, RequestedSchema: userSchema})
	if err != nil {
		return failed("elicitation/create failed: %v", err), nil
	}
	return text("User response: " + answerText(res)), nil
}

// elicitForm is a tool without arguments that asks the client's user to
// fill schema's form and returns the answer.
func elicitForm(message string, schema json.RawMessage) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: message, RequestedSchema: schema})
		if err != nil {
			return failed("elicitation/create failed: %v", err), nil
		}
		return text("Elicitation completed: " + answerText(res)), nil
	}
}

// answerText is an elicitation's answer: its action and what the user
// gave.
func answerText(res *sdk.ElicitResult) string {
	content, err := json.Marshal(res.Content)
	if err != nil {
		content = []byte(fmt.Sprintf("(unprintable: %v)", err))
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content)
}

// userSchema is test_elicitation's form.
var userSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"username": {"type": "string", "description": "User's response"},
		"email": {"type": "string", "description": "User's email address"}
	},
	"required": ["username", "email"]
}`)

// sep1034Schema is a form whose every primitive field has a default
// (SEP-1034).
var sep1034Schema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "description": "User name", "default": "John Doe"},
		"age": {"type": "integer", "description": "User age", "default": 30},
		"score": {"type": "number", "description": "User score", "default": 95.5},
		"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
		"verified": {"type": "boolean", "description": "Verification status", "default": true}
	}
}`)

// sep1330Schema is a form of the five enum variants of SEP-1330: untitled
// and titled single-select, the legacy enumNames, untitled and titled
// multi-select.
var sep1330Schema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
		"titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
			{"const": "value1", "title": "First Option"},
			{"const": "value2", "title": "Second Option"},
			{"const": "value3", "title": "Third Option"}
		]},
		"legacyEnum": {"type": "string", "description": "Legacy titled (deprecated)", "enum": ["opt1", "opt2", "opt3"],
			"enumNames": ["Option One", "Option Two", "Option Three"]},
		"untitledMulti": {"type": "array", "description": "Untitled multi-select", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
		"titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
			{"const": "value1", "title": "First Choice"},
			{"const": "value2", "title": "Second Choice"},
			{"const": "value3", "title": "Third Choice"}
		]}}
	}
}`)
