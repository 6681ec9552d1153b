//go:build linux

package shell

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/internal/supervisor"
	"github.com/myelin-run/myelin/sandbox"
)

func runWith(t *testing.T, p sandbox.Policy, dir, command string) (string, bool) {
	t.Helper()
	r, err := RunWithPolicy(context.Background(), dir, p, Input{Command: command})
	if err != nil {
		t.Fatalf("RunWithPolicy(%q): %v", command, err)
	}
	out := text(t, r)
	return out.Text, out.IsError
}

// A command the sandbox stopped says so, with what the sandbox forbids
// and the flags that loosen it: the model should not take it for a
// missing file or a broken command.
func TestACommandTheSandboxStoppedSaysSoAndHowToLoosenIt(t *testing.T) {
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	outside := t.TempDir()
	write := "echo x > " + outside + "/f"
	if text, isErr := runWith(t, sandbox.Policy{Mode: sandbox.Off}, t.TempDir(), write); isErr {
		t.Fatalf("with the sandbox off the write failed: %q", text)
	}
	text, isErr := runWith(t, sandbox.Policy{}, t.TempDir(), write)
	if !isErr || !strings.Contains(text, "Read-only file system") || !strings.Contains(text, "[exit status 1]\n[myelin's sandbox may be why this failed") {
		t.Fatalf("in the sandbox: error %v, %q; want the exit status and then the sandbox's note", isErr, text)
	}
	for _, want := range []string{"--sandbox-network", "--sandbox-write DIR", "--sandbox off", "may write only the workspace", "no network"} {
		if !strings.Contains(text, want) {
			t.Errorf("the note lacks %q: %q", want, text)
		}
	}
	// With the network allowed, the note does not offer it.
	text, _ = runWith(t, sandbox.Policy{Network: true}, t.TempDir(), write)
	if !strings.Contains(text, "--sandbox off") || strings.Contains(text, "--sandbox-network") || strings.Contains(text, "no network") {
		t.Errorf("with the network allowed: %q", text)
	}
}

// The note comes only when the sandbox may be the cause: a sandboxed
// command failing without a telltale, a timeout, and a command run with
// the sandbox off get none.
func TestTheSandboxNoteComesOnlyWhenTheSandboxMayBeTheCause(t *testing.T) {
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	for _, tt := range []struct {
		name    string
		p       sandbox.Policy
		command string
		note    bool
	}{
		{"a failure without a telltale", sandbox.Policy{}, "echo no such thing >&2; exit 2", false},
		{"a telltale with success", sandbox.Policy{}, "echo Permission denied", false},
		{"a telltale in a failure, sandbox off", sandbox.Policy{Mode: sandbox.Off}, "echo Permission denied >&2; exit 1", false},
		{"a telltale in a failure, sandboxed", sandbox.Policy{}, "echo 'bash: x: Read-only file system' >&2; exit 1", true},
		{"a telltale in a failure, read-only", sandbox.Policy{Mode: sandbox.ReadOnly}, "echo x > f", true},
		{"EXDEV in a failure", sandbox.Policy{}, "echo 'ln: failed to create hard link: Invalid cross-device link' >&2; exit 1", true},
		{"EBUSY in a failure", sandbox.Policy{}, "echo 'mv: cannot move: Device or resource busy' >&2; exit 1", true},
		{"EXDEV with success", sandbox.Policy{}, "echo Invalid cross-device link", false},
	} {
		text, _ := runWith(t, tt.p, t.TempDir(), tt.command)
		if got := strings.Contains(text, "myelin's sandbox may be why"); got != tt.note {
			t.Errorf("%s: note %v, want %v: %q", tt.name, got, tt.note, text)
		}
	}
	ms := 2000 // time under load to print before the timeout
	r, err := Run(context.Background(), t.TempDir(), Input{Command: "echo Permission denied; sleep 30", TimeoutMS: &ms})
	if err != nil {
		t.Fatal(err)
	}
	if text := text(t, r).Text; strings.Contains(text, "sandbox") || !strings.Contains(text, "Permission denied") {
		t.Errorf("a timeout got the sandbox's note, or printed nothing first: %q", text)
	}
}

// Where no sandbox is available the command is refused with an error
// naming --sandbox off, and does not run.
func TestWithoutASandboxACommandIsRefusedNotRunUnconfined(t *testing.T) {
	defer sandbox.ForceUnavailable("the test says so")()
	dir := t.TempDir()
	_, err := Run(context.Background(), dir, Input{Command: "echo ran > ran"})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "--sandbox off") {
		t.Errorf("Run = %v, want ErrUnavailable naming --sandbox off", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
	if text, isErr := runWith(t, sandbox.Policy{Mode: sandbox.Off}, dir, "echo ran"); isErr || text != "ran\n" {
		t.Errorf("with the sandbox off: %q", text)
	}
}

// The model is told how its commands are confined.
func TestTheDescriptionSaysHowCommandsAreConfined(t *testing.T) {
	dir := t.TempDir()
	if d := Tool(dir).Description; !strings.Contains(d, "sandbox") || !strings.Contains(d, "no network") || !strings.Contains(d, "no Unix sockets") {
		t.Errorf("the default description does not say the sandbox has no network and no Unix sockets: %q", d)
	}
	if d := ToolWithPolicy(dir, sandbox.Policy{Network: true}).Description; strings.Contains(d, "no Unix sockets") {
		t.Errorf("with the network the description still says no Unix sockets: %q", d)
	}
	if d := ToolWithPolicy(dir, sandbox.Policy{Mode: sandbox.Off}).Description; !strings.Contains(d, "unconfined") {
		t.Errorf("the description with the sandbox off: %q", d)
	}
}

// What the sandbox refuses says it met the sandbox, whatever the errno
// the refusal gave: a hard link out of where the file may be written
// (EXDEV), a rename of the read-only-mounted .git (EBUSY), a Unix socket
// outside (EPERM, from the seccomp filter).
func TestWhatTheSandboxRefusesSaysItMetTheSandbox(t *testing.T) {
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "us") // short: a socket's path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	attempts := []struct{ name, command, errno string }{
		{"a hard link to a file outside", "ln " + outside + "/f stolen", "Invalid cross-device link"},
		{"moving .git aside", "mv .git git-aside", "Device or resource busy"},
	}
	if _, err := exec.LookPath("python3"); err == nil {
		attempts = append(attempts, struct{ name, command, errno string }{"python connecting to a Unix socket",
			`python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect("` + sock + `")'`, "Operation not permitted"})
	}
	if _, err := exec.LookPath("curl"); err == nil {
		attempts = append(attempts, struct{ name, command, errno string }{"curl connecting to a Unix socket",
			"curl -sS --unix-socket " + sock + " http://x/", ""})
	}
	for _, a := range attempts {
		ws := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		// (The server closes at once: a client of a Unix socket may fail
		// unconfined too; package sandbox shows that it connects.)
		if text, isErr := runWith(t, sandbox.Policy{Mode: sandbox.Off}, ws, a.command); isErr && !strings.Contains(a.command, sock) {
			t.Fatalf("%s: with the sandbox off it failed, so its test proves nothing: %q", a.name, text)
		}
		ws = t.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		text, isErr := runWith(t, sandbox.Policy{}, ws, a.command)
		if !isErr || !strings.Contains(text, a.errno) || !strings.Contains(text, "[myelin's sandbox may be why this failed") {
			t.Errorf("%s, sandboxed: error %v, %q; want an error with %q and the sandbox's note", a.name, isErr, text, a.errno)
		}
	}
}

// A command that reads a variable the sandbox withheld (a provider key)
// finds nothing, and its result says so, whether it failed or not: the
// model should not take the empty value for the key's. A variable passed
// (--sandbox-env), a command that does not name it, a longer name that
// holds it, and the sandbox off get no such line.
func TestACommandNamingAWithheldVariableIsToldTheSandboxWithheldIt(t *testing.T) {
	if supervisor.LandlockABI() < 1 {
		t.Skip("the kernel offers no Landlock")
	}
	t.Setenv("MYELIN_TEST_SECRET_TOKEN", "s3cret")
	dir := t.TempDir()
	for _, tc := range []struct {
		p       sandbox.Policy
		command string
		note    bool
		isErr   bool
	}{
		{sandbox.Policy{}, `echo "[$MYELIN_TEST_SECRET_TOKEN]"`, true, false},
		{sandbox.Policy{}, `echo "${MYELIN_TEST_SECRET_TOKEN:?unset}"`, true, true},
		{sandbox.Policy{}, `printenv MYELIN_TEST_SECRET_TOKEN`, true, true},
		{sandbox.Policy{Env: []string{"MYELIN_TEST_SECRET_TOKEN"}}, `echo "[$MYELIN_TEST_SECRET_TOKEN]"`, false, false},
		{sandbox.Policy{}, `echo "[$MYELIN_TEST_SECRET_TOKEN_NOT]"`, false, false},
		{sandbox.Policy{}, `echo "[$HOME]" >/dev/null`, false, false},
		{sandbox.Policy{Mode: sandbox.Off}, `echo "[$MYELIN_TEST_SECRET_TOKEN]"`, false, false},
	} {
		text, isErr := runWith(t, tc.p, dir, tc.command)
		if strings.Contains(text, "s3cret") && tc.p.Mode != sandbox.Off && len(tc.p.Env) == 0 {
			t.Errorf("%q: the sandboxed command saw the withheld value: %q", tc.command, text)
		}
		if got := strings.Contains(text, "[myelin's sandbox withheld MYELIN_TEST_SECRET_TOKEN from this command"); got != tc.note {
			t.Errorf("%q (policy %+v): the withheld note is there: %v, want %v; result %q", tc.command, tc.p, got, tc.note, text)
		}
		if isErr != tc.isErr {
			t.Errorf("%q: an error: %v, want %v (the note does not make a success an error); result %q", tc.command, isErr, tc.isErr, text)
		}
	}
}
