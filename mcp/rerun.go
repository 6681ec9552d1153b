package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

// mayRerun says whether a server's tool may be run again when a
// conversation is recovered (tool.Tool.Rerun): as the server's entry says
// when it says ("rerun"), else by the annotations the server listed the
// tool with. A tool whose annotations say it does not modify its
// environment (readOnlyHint) may; so may one that says calling it again
// with the same arguments has no additional effect (idempotentHint) and
// that its updates are only additive (destructiveHint false, said: it is
// true when left out). A destructive tool is not run again even when it
// says it is idempotent: the hints are the server's own claims, unchecked,
// and a wrong one then costs what cannot be undone. No annotations, or
// none of these, mean the call is answered as interrupted (docs/mcp.md).
func mayRerun(entry *bool, a *sdk.ToolAnnotations) bool {
	switch {
	case entry != nil:
		return *entry
	case a == nil:
		return false
	case a.ReadOnlyHint:
		return true
	default:
		return a.IdempotentHint && a.DestructiveHint != nil && !*a.DestructiveHint
	}
}
