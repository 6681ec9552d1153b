package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
)

// permFlags are the flags that say what the model may run without asking
// (SPEC §14, docs/cli.md "What the model may run"): rules that allow, ask
// or deny, and --yes. They are flags of every command that offers tools to
// a model (run, chat, serve); the rules they give come after the user's
// file's, and the workspace's file may only narrow them.
type permFlags struct {
	// rules are the flags' rules, in the order the command line gave
	// them, each checked as it is parsed: a bad one is a usage error
	// naming its flag.
	rules []permission.Rule
	// yes allows every call no rule denies (--yes).
	yes bool

	// policy is the rules loaded (load): the user's file's, the flags',
	// the workspace file's.
	policy *permission.Policy
	// asker, set by the command (not a flag), puts what the policy asks
	// to a person: the terminal's asker in run and chat when a person is
	// there, serve's API; nil when no one can be asked, and then what
	// would be asked is denied.
	asker approval.Asker
}

func (f *permFlags) add(fs *flag.FlagSet) {
	for _, d := range []struct {
		name  string
		d     permission.Decision
		usage string
	}{
		{"allow", permission.Allow, "let the model run what `RULE` names without asking: a tool or glob (workspace--write, github--*), TOOL[readOnlyHint], or a command prefix (go test *); repeat for several"},
		{"ask", permission.Ask, "ask before the model runs what `RULE` names, even where another rule allows it; repeat for several"},
		{"deny", permission.Deny, "never let the model run what `RULE` names (it wins over --allow and --yes); repeat for several"},
	} {
		fs.Func(d.name, d.usage, func(text string) error {
			r, err := permission.ParseRule(text, d.d, "flag --"+d.name)
			if err != nil {
				return fmt.Errorf("%w (docs/cli.md: What the model may run)", err)
			}
			f.rules = append(f.rules, r)
			return nil
		})
	}
	fs.BoolVar(&f.yes, "yes", false, "let the model run every call no rule denies, without asking")
}

// load reads the rules of the files and the flags into f.policy
// (policyFromFlags), once; its error is the command's usage error.
func (f *permFlags) load(workspaceDir string, stderr io.Writer) error {
	if f.policy != nil {
		return nil
	}
	p, err := policyFromFlags(*f, workspaceDir, stderr)
	if err != nil {
		return err
	}
	f.policy = p
	return nil
}

// gate is the approval.Gate of the command's calls: the policy loaded
// (loaded here from workspaceDir when the command did not), f.asker, and
// the user's file for "always" answers. One gate per process: a "yes for
// this session" lasts as long as it does (chat's turns included).
func (f *permFlags) gate(workspaceDir string, stderr io.Writer) (*approval.Gate, error) {
	if err := f.load(workspaceDir, stderr); err != nil {
		return nil, err
	}
	g := &approval.Gate{Policy: f.policy, Asker: f.asker}
	if file, err := userRulesFile(); err == nil {
		g.UserFile = file
	}
	return g, nil
}

// userRulesFile is the user's permissions file; a variable so that a test
// may point it elsewhere without touching the environment.
var userRulesFile = permission.UserFile

// policyFromFlags is the policy a command's model runs under: the rules of
// the user's file (permission.UserFile), then the flags', then those of the
// workspace's file (permission.WorkspaceFile under workspaceDir), which may
// only narrow: an allow there is left out, and the warning saying so is
// written to stderr. A file that cannot be read, or holds a rule that
// cannot be, is an error naming the file and the rule; the command stops
// on it (a usage error), never runs under fewer rules than were written.
//
// serve builds its policy with it too; its API is then the Asker.
func policyFromFlags(f permFlags, workspaceDir string, stderr io.Writer) (*permission.Policy, error) {
	p := &permission.Policy{Yes: f.yes}
	userFile, err := userRulesFile()
	if err != nil {
		return nil, err
	}
	user, _, err := permission.ReadFile(userFile, false)
	if err != nil {
		return nil, fmt.Errorf("your permission rules: %w", err)
	}
	p.User = append(user, f.rules...)
	wsFile := filepath.Join(workspaceDir, filepath.FromSlash(permission.WorkspaceFile))
	ws, warnings, err := permission.ReadFile(wsFile, true)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "myelin: %s\n", w)
	}
	if err != nil {
		return nil, fmt.Errorf("the workspace's permission rules: %w", err)
	}
	p.Workspace = ws
	return p, nil
}
