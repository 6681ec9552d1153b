// Package mcpfixtures owns the tools, resources and prompts the official
// MCP conformance suite's server scenarios name (test_simple_text,
// test://static-text, test_simple_prompt, ...), for `myelin mcp serve
// --conformance-fixtures`: a flag for tests only, documented as such in
// docs/mcp.md. They answer the scenarios that test the protocol with
// fixed content (audio, embedded resources, prompts, sampling and
// elicitation from inside a call) that myelin's own tools do not give.
//
// It must not be reached by anything but that flag: its tools are
// registered directly on the SDK's server, so they bypass the permission
// policy and the result conversion on purpose, to give the exact content
// the suite expects. The content is what each scenario's description in
// the pinned suite (@modelcontextprotocol/conformance 0.1.16) asks for.
package mcpfixtures

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Register adds the fixtures to s: the tools, the resources and resource
// template, and the prompts the suite's server scenarios call by name.
func Register(s *sdk.Server) {
	registerTools(s)
	registerResources(s)
	registerPrompts(s)
}

// step is the pause between the notifications a fixture sends during a
// call (logging, progress): the scenarios ask for about 50ms, so that a
// client is seen to receive several while the call runs.
const step = 50 * time.Millisecond

// Texts the scenarios give exactly.
const (
	simpleText         = "This is a simple text response for testing."
	errorText          = "This tool intentionally returns an error for testing"
	embeddedText       = "This is an embedded resource content."
	mixedText          = "Multiple content types test:"
	mixedResourceJSON  = `{"test":"data","value":123}`
	staticText         = "This is the content of the static text resource."
	watchedText        = "This resource is watched: subscribe to it for updates."
	simplePromptText   = "This is a simple prompt for testing."
	promptResourceText = "Embedded resource content for testing."
	promptResourceAsk  = "Please process the embedded resource above."
	promptImageAsk     = "Please analyze the image above."
)

// noArgs is the input schema of a tool that takes no arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// fixed is a handler whose result does not depend on the call.
func fixed(content ...sdk.Content) sdk.ToolHandler {
	return func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: content}, nil
	}
}

// text is a result of one text.
func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// failed is a tool error the host's model reads (isError), not a
// protocol error.
func failed(format string, a ...any) *sdk.CallToolResult {
	r := text(fmt.Sprintf(format, a...))
	r.IsError = true
	return r
}

func registerTools(s *sdk.Server) {
	tools := []struct {
		tool *sdk.Tool
		h    sdk.ToolHandler
	}{
		{&sdk.Tool{Name: "test_simple_text", Description: "Returns one fixed text (conformance fixture)."},
			fixed(&sdk.TextContent{Text: simpleText})},
		{&sdk.Tool{Name: "test_image_content", Description: "Returns a 1x1 red PNG image (conformance fixture)."},
			fixed(&sdk.ImageContent{Data: redPixelPNG(), MIMEType: "image/png"})},
		{&sdk.Tool{Name: "test_audio_content", Description: "Returns a short silent WAV (conformance fixture)."},
			fixed(&sdk.AudioContent{Data: silentWAV(), MIMEType: "audio/wav"})},
		{&sdk.Tool{Name: "test_embedded_resource", Description: "Returns an embedded text resource (conformance fixture)."},
			fixed(&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: embeddedText}})},
		{&sdk.Tool{Name: "test_multiple_content_types", Description: "Returns a text, an image and an embedded resource (conformance fixture)."},
			fixed(&sdk.TextContent{Text: mixedText},
				&sdk.ImageContent{Data: redPixelPNG(), MIMEType: "image/png"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: mixedResourceJSON}})},
		{&sdk.Tool{Name: "test_error_handling", Description: "Always fails, as a tool error (conformance fixture)."},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return failed("%s", errorText), nil
			}},
		{&sdk.Tool{Name: "test_tool_with_logging", Description: "Sends three info log messages while it runs (conformance fixture)."},
			withLogging},
		{&sdk.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 while it runs (conformance fixture)."},
			withProgress},
		{&sdk.Tool{Name: "test_sampling", Description: "Asks the client's model to answer a prompt (sampling/createMessage; conformance fixture).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
			sampling},
		{&sdk.Tool{Name: "test_elicitation", Description: "Asks the client's user for a username and an email (elicitation/create; conformance fixture).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)},
			elicitation},
		{&sdk.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Asks the client's user with a form whose every field has a default (SEP-1034; conformance fixture)."},
			elicitForm("Please review and update the form fields with defaults", sep1034Schema)},
		{&sdk.Tool{Name: "test_elicitation_sep1330_enums", Description: "Asks the client's user with a form of every enum variant (SEP-1330; conformance fixture)."},
			elicitForm("Please select options from the enum fields", sep1330Schema)},
		{&sdk.Tool{Name: "json_schema_2020_12_tool", Description: "Takes an input schema of JSON Schema 2020-12 ($schema, $defs, additionalProperties; SEP-1613; conformance fixture).",
			InputSchema: schema202012},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("Received: " + string(req.Params.Arguments)), nil
			}},
		{&sdk.Tool{Name: "test_reconnection", Description: "Closes its SSE stream before answering, so the client reconnects (SEP-1699; conformance fixture)."},
			reconnection},
	}
	for _, t := range tools {
		if t.tool.InputSchema == nil {
			t.tool.InputSchema = noArgs
		}
		s.AddTool(t.tool, t.h)
	}
}

// withLogging sends the three info messages the scenario names, a step
// apart. The SDK sends them only at or above the level the client set
// (logging/setLevel), none before it sets one.
func withLogging(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := sleep(ctx, step); err != nil {
				return nil, err
			}
		}
		if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "test_tool_with_logging", Data: msg}); err != nil {
			return nil, fmt.Errorf("sending log message %q: %w", msg, err)
		}
	}
	return text("Tool with logging executed: 3 log messages sent"), nil
}

// withProgress reports 0, 50 and 100 of 100, a step apart, to the
// request's progress token; without one it takes the same time and
// reports nothing.
func withProgress(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := sleep(ctx, step); err != nil {
				return nil, err
			}
		}
		if token == nil {
			continue
		}
		n := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("%.0f of 100", p)}
		if err := req.Session.NotifyProgress(ctx, n); err != nil {
			return nil, fmt.Errorf("reporting progress %.0f: %w", p, err)
		}
	}
	if token == nil {
		return text("Tool with progress executed (no progress token given: no progress reported)"), nil
	}
	return text(fmt.Sprintf("Tool with progress executed: 3 progress notifications sent to token %v", token)), nil
}

// sleep waits d, or less when ctx ends (the call was cancelled).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconnection closes the call's SSE stream (when the transport has one)
// with a short retry, then answers: a client that reconnects with
// Last-Event-ID gets the answer on the new stream, when the server keeps
// its streams' events.
func reconnection(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req.Extra != nil && req.Extra.CloseSSEStream != nil {
		req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: step})
	}
	if err := sleep(ctx, 2*step); err != nil {
		return nil, err
	}
	return text("Reconnection test completed successfully"), nil
}

// schema202012 is the input schema of json_schema_2020_12_tool: the
// keywords of JSON Schema 2020-12 the scenario checks are kept as given.
var schema202012 = json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"}
	},
	"additionalProperties": false
}`)
