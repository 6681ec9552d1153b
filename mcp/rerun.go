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

// readOnly says whether a server's tool says it changes nothing
// (readOnlyHint): the permission policy's default allows its calls and a
// round runs them side by side (tool.Tool.ReadOnly). It is the server's
// own claim, unchecked: a user who does not trust a server's hints denies
// or asks with a rule on its tools (`github--*`), which wins over the
// default.
func readOnly(a *sdk.ToolAnnotations) bool { return a != nil && a.ReadOnlyHint }

// destructive says whether a server's tool may destroy what it acts on
// (tool.Tool.Destructive): its destructiveHint, which MCP takes as true
// when left out, for a tool that is not read-only. No annotations at all
// mean the MCP defaults: not read-only, destructive.
func destructive(a *sdk.ToolAnnotations) bool {
	switch {
	case a == nil:
		return true
	case a.ReadOnlyHint:
		return false
	default:
		return a.DestructiveHint == nil || *a.DestructiveHint
	}
}
