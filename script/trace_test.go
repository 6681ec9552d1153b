package script

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/myelin-run/myelin/tool"
)

// unlockedWriter is a Config.Trace with no lock of its own: a write after
// Run returned races with the caller's read (go test -race sees it).
type unlockedWriter struct{ b bytes.Buffer }

func (u *unlockedWriter) Write(p []byte) (int, error) { return u.b.Write(p) }

// A call a cancel left behind, stuck in a tool that ignores its context,
// writes nothing to Config.Trace once Run has returned: the writer is its
// caller's again. Alone (run on the reading goroutine) and started
// together (run on kept goroutines). A cancel, not the time limit, ends
// the script, once every call has begun: under the race detector a short
// limit can end it before its calls reach the tool.
func TestACallLeftBehindWritesNoTraceAfterRunReturned(t *testing.T) {
	for _, tc := range []struct {
		code  string
		calls int
	}{
		{`await tools["test--stuck"]({})`, 1},
		{`await Promise.all([tools["test--stuck"]({}), tools["test--stuck"]({})])`, 2},
	} {
		t.Run(tc.code, func(t *testing.T) {
			release := make(chan struct{})
			started := make(chan struct{}, tc.calls)
			returned := make(chan struct{}, tc.calls)
			stuck := tool.MustFunc("test--stuck", "Waits for release.", func(context.Context, struct{}) (any, error) {
				started <- struct{}{}
				<-release
				returned <- struct{}{}
				return "late", nil
			})
			r := newRig(t, Limits{}, stuck)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for range tc.calls {
					<-started
				}
				cancel()
			}()
			var trace unlockedWriter
			runGuarded(t, ctx, Config{Tools: r.reg, Trace: &trace}, Limits{Time: time.Minute}, tc.code)
			before := trace.b.Len() // Run returned: the trace is the caller's
			close(release)
			for range tc.calls {
				<-returned
			}
			// what a call does after its tool returns takes no time; give
			// it some to do it wrong
			time.Sleep(200 * time.Millisecond)
			if after := trace.b.Len(); after != before {
				t.Errorf("Config.Trace written after Run returned: %d bytes before, %d after: %q", before, after, trace.b.String())
			}
		})
	}
}
