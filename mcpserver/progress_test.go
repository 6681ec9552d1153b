package mcpserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/sandbox"
	"github.com/myelin-run/myelin/shell"
	"github.com/myelin-run/myelin/tool"
)

// progressRig is a tool that reports the progress it is given, each
// report once the host got the one before (so that none is coalesced),
// and a host that keeps what it gets.
type progressRig struct {
	mu   sync.Mutex
	got  []sdk.ProgressNotificationParams
	seen chan float64
}

func (p *progressRig) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		p.mu.Lock()
		p.got = append(p.got, *req.Params)
		p.mu.Unlock()
		p.seen <- req.Params.Progress
	}}
}

type reportIn struct {
	Done []float64 `json:"done"`
	Wait []bool    `json:"wait"` // wait for the host to get report i
}

func (p *progressRig) tool() *tool.Tool {
	return tool.MustFunc("test--work", "Reports progress.", func(ctx context.Context, in reportIn) (any, error) {
		for i, d := range in.Done {
			tool.ReportProgress(ctx, tool.Progress{Done: d, Total: 3, Message: "step"})
			if in.Wait[i] {
				select {
				case got := <-p.seen:
					if got != d {
						return nil, errors.New("the host got another report than the last")
					}
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return "worked", nil
	})
}

func (p *progressRig) received() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []float64
	for _, n := range p.got {
		out = append(out, n.Progress)
	}
	return out
}

// A call whose request has a progress token gets notifications/progress
// from the tool's reports, with the token, the total and the message;
// progress only rises, so a report that does not is not sent.
func TestACallWithAProgressTokenGetsItsRisingProgress(t *testing.T) {
	p := &progressRig{seen: make(chan float64, 8)}
	s := New(Config{Tools: registry(t, p.tool())})
	cs := connect(t, s, p.options())
	params := &sdk.CallToolParams{Name: "test--work", Arguments: reportIn{Done: []float64{1, 2, 1.5, 2, 3}, Wait: []bool{true, true, false, false, true}}}
	params.SetProgressToken("tok-1")
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("the call failed: %v %v", err, res)
	}
	if got := p.received(); !slices.Equal(got, []float64{1, 2, 3}) {
		t.Errorf("the host got progress %v, want 1, 2, 3 (1.5 and the second 2 do not rise)", got)
	}
	for _, n := range p.got {
		if n.ProgressToken != "tok-1" || n.Total != 3 || n.Message != "step" {
			t.Errorf("a notification is %+v, want the call's token, total 3 and the message", n)
		}
	}
}

// Without a progress token nothing is sent: the tool's reports go
// nowhere. (Notifications come in order: once the report of a later call
// with a token has come, any sent before it would have.)
func TestACallWithoutAProgressTokenGetsNoProgress(t *testing.T) {
	p := &progressRig{seen: make(chan float64, 8)}
	s := New(Config{Tools: registry(t, p.tool())})
	cs := connect(t, s, p.options())
	res := call(t, cs, "test--work", reportIn{Done: []float64{5, 6, 7}, Wait: []bool{false, false, false}})
	if res.IsError {
		t.Fatalf("the call failed: %s", textOf(res))
	}
	params := &sdk.CallToolParams{Name: "test--work", Arguments: reportIn{Done: []float64{1}, Wait: []bool{true}}}
	params.SetProgressToken(7)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	if got := p.received(); !slices.Equal(got, []float64{1}) {
		t.Errorf("the host got progress %v, want only the 1 of the call with a token", got)
	}
}

// A host that cancels a call (notifications/cancelled) ends it: the
// call's context is done, the host's request returns, and the call's
// turn is given back, so that the next call that must run alone runs.
func TestACancelledCallEndsAndGivesBackItsTurn(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	long := tool.MustFunc("test--long", "Waits for its end.", func(ctx context.Context, _ struct{}) (any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	next := tool.MustFunc("test--next", "Runs alone.", func(context.Context, struct{}) (any, error) { return "next ran", nil })
	s := New(Config{Tools: registry(t, long, next)})
	cs := connect(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "test--long", Arguments: map[string]any{}})
		errc <- err
	}()
	receive(t, started, "the long call's start")
	cancel()
	if err := receive(t, errc, "the cancelled request's return"); err == nil {
		t.Error("the cancelled call returned no error to the host")
	}
	if err := receive(t, ended, "the end of the call's context"); !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context ended with %v, want it cancelled", err)
	}
	if r := call(t, cs, "test--next", nil); !strings.Contains(textOf(r), "next ran") {
		t.Errorf("the call after the cancelled one gave %q", textOf(r))
	}
}

// shell--run's command ends when the host cancels its call: the process
// it started is killed, not left running.
func TestACancelledShellCallKillsItsCommand(t *testing.T) {
	ws := openWorkspace(t)
	s := New(Config{Tools: registry(t, shell.ToolWithPolicy(ws.Dir(), sandbox.Policy{Mode: sandbox.Off})), Env: result.Env{Store: ws}})
	cs := connect(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "shell--run", Arguments: map[string]any{"command": "sleep 300 & echo $! > pid.tmp && mv pid.tmp pid; wait"}})
		errc <- err
	}()
	var pid int
	waitFor(t, "the command's start", func() bool {
		b, err := os.ReadFile(filepath.Join(ws.Dir(), "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	cancel()
	if err := receive(t, errc, "the cancelled call's return"); err == nil {
		t.Error("the cancelled call returned no error")
	}
	waitFor(t, "the end of the command's process", func() bool { return syscall.Kill(pid, 0) != nil })
}
