package mcpfixtures

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// completions are the values each completable argument offers, by the
// reference's name (a prompt's name, or a template's URI) and argument.
var completions = map[[2]string][]string{
	{argsPrompt, "arg1"}: {"paris", "park", "party", "test", "testing"},
	{argsPrompt, "arg2"}: {"hello", "help", "world"},
	{dataTemplate, "id"}: {"123", "456", "789"},
}

// Complete answers completion/complete for the fixtures' prompt and
// template arguments: the values that start with what was typed, in their
// fixed order. A reference or argument that completes nothing is an
// invalid params error naming those that do.
func Complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref (ref/prompt or ref/resource)"}
	}
	ref := p.Ref.Name
	if p.Ref.Type == "ref/resource" {
		ref = p.Ref.URI
	}
	values, ok := completions[[2]string{ref, p.Argument.Name}]
	if !ok {
		var known []string
		for k := range completions {
			known = append(known, k[0]+" "+k[1])
		}
		slices.Sort(known)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("no completions for argument %q of %s %q; these complete: %s", p.Argument.Name, p.Ref.Type, ref, strings.Join(known, "; "))}
	}
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: out, Total: len(out)}}, nil
}
