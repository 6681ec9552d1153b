package agent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

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
				cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count", "1")
				cmd.Env = append(os.Environ(), hugeBodyWire+"="+wire)
				if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("PASS")) {
					t.Fatalf("%v\n%s", err, out)
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
			_, err = r.agent.Provider.Complete(ctx, req, nil)
			hugepage.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if len(body) < 8<<20 {
				t.Fatalf("the body is %d bytes, want the 8 MB text in it", len(body))
			}
			ok, err := hugepage.Advised(body)
			if err != nil && strings.Contains(err.Error(), "unsupported") {
				t.Skip(err)
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
