// Package sandbox confines the commands myelin runs for the model
// (shell--run, and stdio MCP servers whose entry asks for it) with the
// operating system's own means (SPEC §14): they may write only the
// workspace (less its protected paths) and a private temp dir, may not
// read the user's secrets nor see the provider keys in the environment,
// and reach no network unless allowed. Where the system offers no such
// means, a command is refused with an error naming `--sandbox off`,
// never run unconfined in silence.
//
// It must not decide whether a call may run at all (package permission
// and approval do), nor start or wait for the command itself (package
// child does, and the caller waits).
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
)

// Mode is how far commands are confined.
type Mode string

// The modes. The zero Mode is WorkspaceWrite: confined by default.
const (
	// WorkspaceWrite lets a command write the workspace (less its
	// protected paths) and its temp dir; it reads the system, not the
	// user's secrets.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets a command write only its temp dir (and
	// Policy.Writable, which the user named).
	ReadOnly Mode = "read-only"
	// Off runs commands unconfined, with the user's rights: only when the
	// user says so (--sandbox off).
	Off Mode = "off"
)

// Policy is how the commands of one workspace are confined. Its zero
// value is WorkspaceWrite with no network.
type Policy struct {
	Mode Mode
	// Network lets commands reach the network (--sandbox-network).
	Network bool
	// Writable are more directories commands may write (a build cache
	// outside the workspace), absolute paths.
	Writable []string
	// Env are the names of more environment variables passed to
	// commands beyond the built-in allow-list.
	Env []string
}

// ErrUnavailable is wrapped by the error Apply returns where the system
// offers no sandbox: the command is refused, and the error names
// `--sandbox off`.
var ErrUnavailable = errors.New("no sandbox is available here")

// Apply prepares cmd, made by exec.Command and not yet started, to run
// confined by p with workspace as the directory it may write. It is to be
// started with package child (child.Start), which runs the command under
// a supervisor that sets the confinement up; started any other way, it
// refuses to run. Apply replaces cmd.Path, cmd.Args, cmd.Env and
// cmd.SysProcAttr's namespace fields: the environment (cmd.Env, or
// myelin's own when it is nil) is scrubbed to Allowed plus p.Env, so a
// variable the caller set in cmd.Env passes only when p.Env names it, and
// TMPDIR is the command's own temp dir. With Mode Off it changes nothing.
//
// Where the system offers no sandbox the error wraps ErrUnavailable and
// names `--sandbox off`; bad input (an unknown mode, a relative Writable
// dir) gets an error saying what is wrong.
func (p Policy) Apply(cmd *exec.Cmd, workspace string) error {
	switch p.Mode {
	case "", WorkspaceWrite, ReadOnly:
	case Off:
		return nil
	default:
		return fmt.Errorf("sandbox: unknown mode %q: want %s, %s or %s", p.Mode, WorkspaceWrite, ReadOnly, Off)
	}
	for _, name := range p.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("sandbox: %q is not the name of an environment variable (a name has no = and is not empty)", name)
		}
	}
	for _, dir := range p.Writable {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("sandbox: the writable directory %q is not an absolute path", dir)
		}
	}
	if cmd.Process != nil {
		return fmt.Errorf("sandbox: %s was already started", cmd.Path)
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	if why := forcedUnavailable(); why != "" {
		return unavailable(why)
	}
	return p.apply(cmd, workspace)
}

// unavailable is the error of a command refused for want of a sandbox.
func unavailable(why string) error {
	return fmt.Errorf("%w (%s): the command was not run; run with --sandbox off to run commands unconfined, with your rights", ErrUnavailable, why)
}

// UnavailableEnv, when set to a reason, makes Apply refuse every command
// as if the system offered no sandbox, saying that reason: tests use it
// to see the refusal on a machine that has a sandbox. It can only refuse,
// never loosen.
const UnavailableEnv = "MYELIN_TEST_SANDBOX_UNAVAILABLE"

// forceUnavailable is set by ForceUnavailable.
var forceUnavailable atomic.Pointer[string]

// ForceUnavailable makes Apply refuse every command in this process as if
// the system offered no sandbox, saying why (tests use it), until the
// returned function is called.
func ForceUnavailable(why string) (restore func()) {
	forceUnavailable.Store(&why)
	return func() { forceUnavailable.Store(nil) }
}

func forcedUnavailable() string {
	if p := forceUnavailable.Load(); p != nil {
		return *p
	}
	return os.Getenv(UnavailableEnv)
}

// Allowed are the environment variables a confined command gets from
// myelin's environment (beyond Policy.Env), besides every LC_* and the
// TMPDIR the sandbox sets: where things are and how to show them, never a
// key or a token. SSH_AUTH_SOCK, XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS
// are left out on purpose: they lead to agents that act with the user's
// keys.
var Allowed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ",
	"COLORTERM", "NO_COLOR", "PAGER", "EDITOR", "VISUAL",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
	"GOROOT", "GOPATH", "GOMODCACHE", "GOCACHE", "GOFLAGS", "GOTOOLCHAIN",
	"CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "VIRTUAL_ENV",
}

// Passes reports whether a command confined by p gets the variable
// name from myelin's environment: one of Allowed, an LC_*, or one p.Env
// names. (With Mode Off every variable passes.)
func (p Policy) Passes(name string) bool {
	return p.Mode == Off || strings.HasPrefix(name, "LC_") || slices.Contains(Allowed, name) || slices.Contains(p.Env, name)
}

// scrub keeps of env the variables p passes.
func (p Policy) scrub(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); p.Passes(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Secrets are the files and directories a confined command may not read
// (nor list inside, nor write), given the user's home and config
// directories: keys and tokens of ssh, the clouds, git, registries, and
// myelin's own token store and settings. The system's own (/etc/shadow,
// the ssh host keys) count too: DAC keeps them from a user, not from root.
func Secrets(home, configDir string) []string {
	var out []string
	if home != "" {
		for _, rel := range []string{
			".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker/config.json",
			".netrc", ".git-credentials", ".config/git/credentials",
			".config/gcloud", ".config/gh", ".pypirc", ".cargo/credentials",
			".cargo/credentials.toml", ".password-store", ".local/share/keyrings",
			".myelin",
		} {
			out = append(out, filepath.Join(home, rel))
		}
	}
	if configDir != "" {
		for _, rel := range []string{"myelin", "gcloud", "gh", "git/credentials"} {
			out = append(out, filepath.Join(configDir, rel))
		}
	}
	out = append(out, "/etc/shadow", "/etc/gshadow")
	if keys, err := filepath.Glob("/etc/ssh/ssh_host_*_key"); err == nil {
		out = append(out, keys...)
	}
	return out
}
