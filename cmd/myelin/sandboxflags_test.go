package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/sandbox"
)

// A bad sandbox flag is a usage error (exit 2) that names the flag and
// what to give, on every command that offers shell--run, before anything
// runs.
func TestABadSandboxFlagIsAUsageErrorNamingIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"--sandbox", "none"}, `want workspace-write (the default), read-only or off, got "none"`},
		{[]string{"--sandbox", ""}, `want workspace-write (the default), read-only or off, got ""`},
		{[]string{"--sandbox-write", filepath.Join(dir, "missing")}, "does not exist: make it first"},
		{[]string{"--sandbox-write", file}, "is not a directory"},
		{[]string{"--sandbox-write", ""}, "give a directory"},
		{[]string{"--sandbox-env", "GOPATH=/x"}, "is not a variable's name"},
		{[]string{"--sandbox", "off", "--sandbox-network"}, "--sandbox-network loosens a sandbox, and there is none"},
		{[]string{"--sandbox", "off", "--sandbox-write", dir, "--sandbox-env", "GOPATH"}, "--sandbox-write and --sandbox-env loosen a sandbox"},
	}
	commands := map[string][]string{
		"tool call": {"tool", "call", "shell--run", `{"command":"touch ran"}`, "--allow-shell", "--workspace", dir},
		"run":       {"run", "--allow-shell", "--workspace", dir, "hi"},
		"chat":      {"chat", "--allow-shell", "--workspace", dir},
		"serve":     {"serve", "--allow-shell", "--workspace", dir, "--addr", "127.0.0.1:0"},
	}
	for name, args := range commands {
		for _, tt := range tests {
			t.Run(name+" "+strings.Join(tt.flags, " "), func(t *testing.T) {
				fakeAnthropic(t) // no step: nothing is to reach the model
				_, errOut, code := cli(t, append(slices.Clone(args), tt.flags...)...)
				if code != exitUsage || !strings.Contains(errOut, tt.want) {
					t.Errorf("exit %d, want %d, with %q in stderr: %q", code, exitUsage, tt.want, errOut)
				}
				if exists(filepath.Join(dir, "ran")) {
					t.Errorf("the command ran")
				}
			})
		}
	}
}

// The flags make the policy shell--run's commands run under: a relative
// --sandbox-write made absolute as given, repeated flags kept in order,
// and workspace-write when --sandbox is not given.
func TestSandboxFlagsMakeThePolicy(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"cache", "data"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(base)
	var f sandboxFlags
	fs := newFlagSet("test")
	f.add(fs)
	if got := f.policy(); got.Mode != sandbox.WorkspaceWrite || got.Network || got.Writable != nil || got.Env != nil {
		t.Errorf("no flags: policy %+v, want workspace-write, no network, nothing more", got)
	}
	if err := fs.Parse([]string{"--sandbox", "read-only", "--sandbox-network", "--sandbox-write", "cache", "--sandbox-write", filepath.Join(base, "data", "..", "data"), "--sandbox-env", "GOPATH", "--sandbox-env", "GOFLAGS"}); err != nil {
		t.Fatal(err)
	}
	got := f.policy()
	want := sandbox.Policy{Mode: sandbox.ReadOnly, Network: true, Writable: []string{filepath.Join(base, "cache"), filepath.Join(base, "data")}, Env: []string{"GOPATH", "GOFLAGS"}}
	if got.Mode != want.Mode || got.Network != want.Network || !slices.Equal(got.Writable, want.Writable) || !slices.Equal(got.Env, want.Env) {
		t.Errorf("policy %+v, want %+v", got, want)
	}
	if err := f.check(); err != nil {
		t.Errorf("read-only with the network and more dirs is refused: %v", err)
	}
}

// --sandbox off is said once on stderr, naming what it means, when
// shell--run is offered; not at all when it is not, nor sandboxed.
func TestSandboxOffIsSaidOnceOnStderr(t *testing.T) {
	dir := workspaceWith(t, nil)
	const said = "--sandbox off: shell--run's commands run unconfined, with your rights"
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"tool", "call", "shell--run", `{"command":"true"}`, "--allow-shell", "--sandbox", "off"}, 1},
		{[]string{"tool", "list", "--allow-shell", "--sandbox", "off"}, 1},
		{[]string{"tool", "list", "--sandbox", "off"}, 0},
		{[]string{"tool", "list", "--allow-shell"}, 0},
	} {
		_, errOut, code := cli(t, append(tt.args, "--workspace", dir)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, errOut)
		}
		if n := strings.Count(errOut, said); n != tt.want {
			t.Errorf("%q: stderr says %q %d times, want %d: %q", tt.args, said, n, tt.want, errOut)
		}
	}
}
