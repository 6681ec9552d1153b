package permission

import (
	"encoding/json"
	"strings"
	"testing"
)

// The rules a session or always answer adds: the literal words of each
// command that asked, the tool's name for a tool; none when no rule can
// allow the call beyond this once. Each rule allows its command again
// and is no wider.
func TestRulesForAreTheWordsOfTheCommandsThatAsked(t *testing.T) {
	p := Policy{User: append(rules(t, Allow, "--allow", "git status"), rules(t, Ask, "--ask", "workspace--edit", "docker *")...)}
	for _, tc := range []struct {
		name string
		call Call
		want string // the rules joined by " | "; "" for none
	}{
		{"a tool", Call{Tool: "github--create_issue"}, "github--create_issue"},
		{"a command", shell("go test ./..."), "go test ./..."},
		{"only the commands that asked", shell("git status && make build && go vet ./x"), "make build | go vet ./x"},
		{"quotes taken off", shell(`go test -run 'TestA'`), "go test -run TestA"},
		{"a glob character quoted", shell(`ls '*.go'`), `ls \*.go`},
		{"a one-word command that reads as a tool", shell(`my_tool`), "shell--run(my_tool)"},
		{"the same command twice", shell("make; make"), "make"},
		{"a variable", shell("go test $PKG"), ""},
		{"a substitution", shell("echo $(date)"), ""},
		{"assignments", shell("CGO_ENABLED=0 go build"), ""},
		{"a word with a space", shell(`git commit -m "fix it"`), ""},
		{"an unreadable line", shell(`echo "x`), ""},
		{"an explicit ask rule", Call{Tool: "workspace--edit"}, ""},
		{"a command an ask rule names", shell("docker ps"), ""},
		{"an allowed call", Call{Tool: "workspace--read", ReadOnly: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(p.RulesFor(tc.call), " | ")
			if got != tc.want {
				t.Fatalf("RulesFor = %q, want %q", got, tc.want)
			}
			if got == "" {
				return
			}
			// the rules added, the call is allowed; a longer command is not
			q := Policy{User: append(append([]Rule(nil), p.User...), rules(t, Allow, "", strings.Split(got, " | ")...)...)}
			if v := q.Check(tc.call); v.Decision != Allow {
				t.Errorf("with the rules added the call is %v: %s", v.Decision, v.Reason)
			}
			if tc.call.Tool == ShellTool {
				var in struct{ Command string }
				_ = json.Unmarshal(tc.call.Input, &in)
				if v := q.Check(shell(in.Command + " --and-more")); v.Decision == Allow {
					t.Errorf("the rules %q allow more words than the command had", got)
				}
			}
		})
	}
}
