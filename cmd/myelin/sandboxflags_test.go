package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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
	home := t.TempDir()
	t.Setenv("HOME", home)
	inSSH := filepath.Join(home, ".ssh", "keys")
	if err := os.MkdirAll(inSSH, 0o700); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		flags []string
		want  string
	}{[]string{"--sandbox-write", inSSH}, "is in " + filepath.Join(home, ".ssh") + ", one of your secrets"})
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
				// A flag taken when it should be refused would have serve
				// listen until stopped: stopped after a while, it fails.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var out, stderr bytes.Buffer
				code := run(ctx, append(slices.Clone(args), tt.flags...), strings.NewReader(""), &out, &stderr)
				errOut := stderr.String()
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

// Each flag reaches shell--run's commands: read-only keeps them from the
// workspace, --sandbox-write lets them write a directory outside it,
// --sandbox-env passes a variable, --sandbox-network lets them reach a
// loopback server; without the flag, each is refused.
func TestSandboxFlagsReachShellRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux's")
	}
	dir, cache := workspaceWith(t, nil), t.TempDir()
	t.Setenv("MYELIN_TEST_PASSED", "passed-value")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served") }))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	fetch := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3`, host, port)
	for _, tt := range []struct {
		name, command string
		flags         []string
		without, with bool // whether the command does it without the flags, and with them
		check         func(out string) bool
	}{
		{"write the workspace", "touch in-ws && echo done", []string{"--sandbox", "read-only"}, true, false,
			func(string) bool {
				ok := exists(filepath.Join(dir, "in-ws"))
				os.Remove(filepath.Join(dir, "in-ws"))
				return ok
			}},
		{"write a directory outside", "touch " + cache + "/x && echo done", []string{"--sandbox-write", cache}, false, true,
			func(string) bool {
				ok := exists(filepath.Join(cache, "x"))
				os.Remove(filepath.Join(cache, "x"))
				return ok
			}},
		{"see a variable", "echo ${MYELIN_TEST_PASSED:?unset}", []string{"--sandbox-env", "MYELIN_TEST_PASSED"}, false, true,
			func(out string) bool { return strings.Contains(out, "passed-value") }},
		{"reach a loopback server", fetch, []string{"--sandbox-network"}, false, true,
			func(out string) bool { return strings.Contains(out, "served") }},
	} {
		for _, given := range []bool{false, true} {
			args := []string{"tool", "call", "shell--run", fmt.Sprintf(`{"command":%q}`, tt.command), "--allow-shell", "--workspace", dir}
			want := tt.without
			if given {
				args, want = append(args, tt.flags...), tt.with
			}
			out, errOut, _ := cli(t, args...)
			if got := tt.check(out); got != want {
				t.Errorf("%s, %q given %v: it did %v, want %v: %q %q", tt.name, tt.flags, given, got, want, out, errOut)
			}
		}
	}
}
