//go:build linux

package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/child/supervisor"
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
	} {
		text, _ := runWith(t, tt.p, t.TempDir(), tt.command)
		if got := strings.Contains(text, "myelin's sandbox may be why"); got != tt.note {
			t.Errorf("%s: note %v, want %v: %q", tt.name, got, tt.note, text)
		}
	}
	ms := 300
	r, err := Run(context.Background(), t.TempDir(), Input{Command: "echo Permission denied; sleep 30", TimeoutMS: &ms})
	if err != nil {
		t.Fatal(err)
	}
	if text := text(t, r).Text; strings.Contains(text, "sandbox") {
		t.Errorf("a timeout got the sandbox's note: %q", text)
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
	if d := Tool(dir).Description; !strings.Contains(d, "sandbox") || !strings.Contains(d, "no network") {
		t.Errorf("the default description: %q", d)
	}
	if d := ToolWithPolicy(dir, sandbox.Policy{Mode: sandbox.Off}).Description; !strings.Contains(d, "unconfined") {
		t.Errorf("the description with the sandbox off: %q", d)
	}
}
