package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/myelin-run/myelin/sandbox"
)

// sandboxFlags say how shell--run's commands are confined (SPEC §14,
// docs/security.md): --sandbox, --sandbox-network, --sandbox-write and
// --sandbox-env, on run, chat, serve and tool. Each value is checked as
// it is parsed, so that a bad one is a usage error (exit 2) naming the
// flag, before anything starts.
type sandboxFlags struct {
	mode    sandboxMode
	network bool
	write   sandboxDirs
	env     sandboxEnv
}

func (f *sandboxFlags) add(fs *flag.FlagSet) {
	fs.Var(&f.mode, "sandbox", "the `MODE` of shell--run's sandbox: workspace-write (the default: commands write only the workspace (not the .git, .myelin and .mcp.json it holds) and a temp dir; they read no secrets of your home, see no provider keys and reach no network), read-only (they write only a temp dir) or off (they run unconfined, with your rights)")
	fs.BoolVar(&f.network, "sandbox-network", false, "let shell--run's commands reach the network and Unix sockets by path (by default they reach neither: only a loopback of their own, not the host's)")
	fs.Var(&f.write, "sandbox-write", "one more `DIR` shell--run's commands may write (a build cache outside the workspace); it must exist; repeat the flag for more")
	fs.Var(&f.env, "sandbox-env", "one more environment variable `NAME` passed to shell--run's commands (provider keys and tokens are not, by default); repeat the flag for more")
}

// check refuses flags that mean nothing together: with --sandbox off
// nothing is confined, so a flag that loosens the sandbox would be
// silently moot.
func (f *sandboxFlags) check() error {
	if f.mode.mode != sandbox.Off {
		return nil
	}
	var moot []string
	if f.network {
		moot = append(moot, "--sandbox-network")
	}
	if len(f.write) > 0 {
		moot = append(moot, "--sandbox-write")
	}
	if len(f.env) > 0 {
		moot = append(moot, "--sandbox-env")
	}
	if len(moot) > 0 {
		verb := "loosens"
		if len(moot) > 1 {
			verb = "loosen"
		}
		return fmt.Errorf("--sandbox off runs commands unconfined, with your rights and your whole environment: %s %s a sandbox, and there is none (leave it out, or give --sandbox workspace-write or read-only)", strings.Join(moot, " and "), verb)
	}
	return nil
}

// policy is the sandbox.Policy the flags give.
func (f *sandboxFlags) policy() sandbox.Policy {
	return sandbox.Policy{Mode: f.mode.get(), Network: f.network, Writable: append([]string(nil), f.write...), Env: append([]string(nil), f.env...)}
}

// warnOff says once, on stderr, that commands run unconfined, when the
// user asked for it and shell--run is offered.
func (f *sandboxFlags) warnOff(stderr io.Writer) {
	if f.mode.get() == sandbox.Off {
		fmt.Fprintln(stderr, "myelin: --sandbox off: shell--run's commands run unconfined, with your rights: they can read your files and keys, reach the network and write anywhere you can")
	}
}

// sandboxMode is --sandbox's value: one of sandbox's modes.
type sandboxMode struct{ mode sandbox.Mode }

func (m *sandboxMode) get() sandbox.Mode {
	if m.mode == "" {
		return sandbox.WorkspaceWrite
	}
	return m.mode
}

func (m *sandboxMode) String() string {
	if m == nil {
		return ""
	}
	return string(m.get())
}

func (m *sandboxMode) Set(s string) error {
	switch mode := sandbox.Mode(s); mode {
	case sandbox.WorkspaceWrite, sandbox.ReadOnly, sandbox.Off:
		m.mode = mode
		return nil
	}
	return fmt.Errorf("want workspace-write (the default), read-only or off, got %q", s)
}

// sandboxDirs is --sandbox-write's values: existing directories, made
// absolute (relative to the working directory of myelin) as they are
// given, so that a command's own working directory cannot change them.
type sandboxDirs []string

func (d *sandboxDirs) String() string {
	if d == nil {
		return ""
	}
	return strings.Join(*d, ",")
}

func (d *sandboxDirs) Set(s string) error {
	if s == "" {
		return errors.New("give a directory")
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist: make it first (commands are let write only directories that exist)", abs)
	case err != nil:
		return fmt.Errorf("%s: %w", abs, err)
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", abs)
	}
	if secret := inSecret(abs); secret != "" {
		return fmt.Errorf("%s is in %s, one of your secrets, which commands may neither read nor write: choose a directory outside it", abs, secret)
	}
	*d = append(*d, abs)
	return nil
}

// inSecret is the secret of the user's (sandbox.Secrets) that dir is
// in, or is, symbolic links resolved; "" for none. The sandbox refuses
// such a directory at each command; the flag refuses it at once.
func inSecret(dir string) string {
	home, _ := os.UserHomeDir()
	config, _ := os.UserConfigDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	for _, s := range sandbox.Secrets(home, config) {
		r, err := filepath.EvalSymlinks(s)
		if err != nil {
			continue // not there: nothing to be in
		}
		if rel, err := filepath.Rel(r, real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return s
		}
	}
	return ""
}

// sandboxEnv is --sandbox-env's values: names of environment variables.
type sandboxEnv []string

// envName is what a variable's name may be: what a shell can name.
// Compiled at its first use, not at init: every myelin process ran the init (issue 34).
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func (e *sandboxEnv) String() string {
	if e == nil {
		return ""
	}
	return strings.Join(*e, ",")
}

func (e *sandboxEnv) Set(s string) error {
	if !envName().MatchString(s) {
		return fmt.Errorf("%q is not a variable's name: give a name like GOPATH (letters, digits and _, not starting with a digit), not NAME=value", s)
	}
	*e = append(*e, s)
	return nil
}
