package shell

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A command that stops its supervisor (SIGSTOP to its parent, package
// child) and exits: the call returns with its output and exit status
// when the command ends, not at its timeout (it waited for the timeout,
// two minutes by default: the stopped supervisor never reported the end).
// The stop comes 0.2 s after the start, after child.Start returned (a stop
// before the supervisor's first word is Start's to continue, and passed
// without the wait's fix). The test's own bound (a context of 5 s,
// against a timeout of a minute) only keeps a broken build from waiting
// the minute.
func TestACommandThatStopsItsSupervisorAndExitsEndsTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	minute := 60000
	r, err := RunWithPolicy(ctx, t.TempDir(), testPolicy, Input{Command: `echo before; sleep 0.2; kill -STOP $PPID || exit 9; exit 3`, TimeoutMS: &minute})
	if err != nil {
		t.Fatal(err)
	}
	out := text(t, r)
	if strings.HasSuffix(out.Text, "[exit status 9]") {
		t.Skipf("the command could not stop its parent here: %q", out.Text)
	}
	if out.Text != "before\n[exit status 3]" || !out.IsError {
		t.Fatalf("text = %q, error %v; want its output and exit status 3", out.Text, out.IsError)
	}
}
