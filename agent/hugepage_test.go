package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Every wire makes a first body (one built on no kept prefix) of 8 MB in
// huge pages while a run's start asks for them (internal/hugepage). Each
// wire's in a process of its own: memory advised for one wire's body and
// freed is advised still when another's body is made in it.
func TestEveryWiresFirstBodyIsInHugePagesWhileAllowed(t *testing.T) {
	ctx := context.Background()
	only := os.Getenv(hugeBodyWire)
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			if only == "" {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				name := t.Name()
				pattern := "^" + regexp.QuoteMeta(strings.Split(name, "/")[0]) + "$/^" + regexp.QuoteMeta(wire) + "$"
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", pattern, "-test.count", "1", "-test.v")
				cmd.Env = append(os.Environ(), hugeBodyWire+"="+wire)
				out, err := cmd.CombinedOutput()
				switch {
				case err != nil:
					t.Fatalf("the wire's process: %v\n%s", err, out)
				case bytes.Contains(out, []byte("--- SKIP: "+name+" ")):
					t.Skipf("the wire's process skipped:\n%s", out)
				case !bytes.Contains(out, []byte("--- PASS: "+name+" ")):
					t.Fatalf("the wire's process did not pass %s:\n%s", name, out)
				}
				return
			}
			if wire != only {
				t.Skip("another wire's process")
			}
			r := newWireRig(t, wire)
			big := strings.Repeat("a line of a file that is long\n", 8<<20/30)
			if err := r.agent.Store.Append(ctx, r.id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: big}}}); err != nil {
				t.Fatal(err)
			}
			req, err := r.agent.Request(ctx, r.id)
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			req.OnBody = func(b []byte) { body = b }
			r.srv.Push(providertest.Step{Text: "sent"})
			hugepage.Allow()
			defer hugepage.Stop() // which takes the advice back: checked before
			if _, err := r.agent.Provider.Complete(ctx, req, nil); err != nil {
				t.Fatal(err)
			}
			if len(body) < 8<<20 {
				t.Fatalf("the body is %d bytes, want the 8 MB text in it", len(body))
			}
			ok, err := hugepage.Advised(body)
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err) // the kernel's setting: nothing is advised here
			}
			if err != nil || !ok {
				t.Fatalf("the first body's array is not advised for huge pages (%v)", err)
			}
		})
	}
}

// hugeBodyWire names the wire TestEveryWiresFirstBodyIsInHugePagesWhileAllowed
// checks in a process of the test binary's own.
const hugeBodyWire = "MYELIN_TEST_HUGE_BODY_WIRE"
