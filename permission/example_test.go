package permission_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/myelin-run/myelin/permission"
)

// A policy decides each call: a deny rule wins over an ask, an ask over an
// allow, and with no rule the default allows what only reads and asks of
// the rest. A shell command line is decided command by command, as its
// least allowed command.
func ExamplePolicy_Check() {
	rule := func(text string, d permission.Decision) permission.Rule {
		r, err := permission.ParseRule(text, d, "--"+d.String())
		if err != nil {
			log.Fatal(err)
		}
		return r
	}
	p := &permission.Policy{User: []permission.Rule{
		rule("go test *", permission.Allow),
		rule("rm *", permission.Deny),
		rule("workspace--write", permission.Allow),
	}}
	shell := func(line string) permission.Call {
		in, _ := json.Marshal(map[string]string{"command": line})
		return permission.Call{Tool: permission.ShellTool, Input: in}
	}
	for _, c := range []permission.Call{
		{Tool: "workspace--read", ReadOnly: true},
		{Tool: "workspace--write"},
		{Tool: "github--create_issue"},
		shell("go test ./..."),
		shell("go test ./... && rm -rf build"),
	} {
		v := p.Check(c)
		fmt.Printf("%s: %s (%s)\n", c.Tool, v.Decision, v.Reason)
	}
	// Output:
	// workspace--read: allow (allowed by default: workspace--read only reads)
	// workspace--write: allow (allowed by workspace--write (--allow))
	// github--create_issue: ask (asked by default: no rule allows github--create_issue)
	// shell--run: allow (allowed by go test * (--allow))
	// shell--run: deny (denied by rm * (--deny) (of the commands in "go test ./... && rm -rf build", the least allowed is "rm -rf build"))
}
