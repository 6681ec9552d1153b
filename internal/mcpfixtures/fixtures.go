// Package mcpfixtures owns the tools, resources and prompts the official
// MCP conformance suite's server scenarios name (test_simple_text,
// test://static-text, test_simple_prompt, ...), for `myelin mcp serve
// --conformance-fixtures`: a flag for tests only, documented as such in
// docs/mcp.md. They answer the scenarios that test the protocol with
// fixed content (audio, embedded resources, prompts) that myelin's own
// tools do not give.
//
// It must not be reached by anything but that flag: its tools bypass the
// permission policy and the result conversion on purpose, to give the
// exact bytes the suite expects.
package mcpfixtures

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Register adds the fixtures to s.
func Register(s *sdk.Server) {}

// Complete answers completion/complete for the fixtures' prompt and
// template arguments.
func Complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	return &sdk.CompleteResult{}, nil
}
