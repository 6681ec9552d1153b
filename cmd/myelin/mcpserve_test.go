package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// mcpHost is an MCP host (the go-sdk's client) connected over pipes to
// myelin mcp serve, run in process as main runs it.
type mcpHost struct {
	session *sdk.ClientSession
	stderr  *lockedBuffer
	in      io.WriteCloser // the server's stdin: closing it ends the server
	exit    chan int

	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
	changed  int // tools/list_changed notifications
}

// startMCPServe runs `myelin mcp serve args...` with its stdin and stdout
// pipes to a host, connected and initialized. The server is ended (its
// stdin closed) when the test ends.
func startMCPServe(t *testing.T, args ...string) *mcpHost {
	t.Helper()
	return startMCPServeFor(t, hostOptions{}, args...)
}

// hostOptions are what a host brings: the protocol version it asks for
// ("": the SDK's latest) and how it answers elicitations (nil: it does not
// declare the capability).
type hostOptions struct {
	version string
	elicit  func(*sdk.ElicitParams) *sdk.ElicitResult
}

// startMCPServeFor is startMCPServe with a host of opts.
func startMCPServeFor(t *testing.T, opts hostOptions, args ...string) *mcpHost {
	t.Helper()
	h := &mcpHost{stderr: &lockedBuffer{}, exit: make(chan int, 1)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h.in = inW
	go func() {
		h.exit <- mcpServeCommand(context.Background(), args, inR, outW, h.stderr)
		outW.Close()
		inR.Close()
	}()
	co := &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.progress = append(h.progress, req.Params)
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.changed++
		},
	}
	if opts.elicit != nil {
		co.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return opts.elicit(req.Params), nil
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, co)
	cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: opts.version})
	if err != nil {
		inW.Close()
		t.Fatalf("connecting to mcp serve %q: %v; its stderr: %s", args, err, h.stderr)
	}
	h.session = cs
	t.Cleanup(func() { h.end(t) })
	return h
}

// end closes the server's stdin, as a host that quits does, and returns
// its exit status.
func (h *mcpHost) end(t *testing.T) int {
	t.Helper()
	h.in.Close()
	select {
	case code := <-h.exit:
		h.exit <- code // for the next end
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("mcp serve did not end within 30 s of its stdin closing; its stderr: %s", h.stderr)
	}
	return -1
}

// names are the tools the host is offered.
func (h *mcpHost) names(t *testing.T) []string {
	t.Helper()
	res, err := h.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v; stderr: %s", err, h.stderr)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// call calls the tool name with args and returns the result and its text.
func (h *mcpHost) call(t *testing.T, ctx context.Context, name string, args any, progressToken any) (*sdk.CallToolResult, string) {
	t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		p.SetProgressToken(progressToken)
	}
	res, err := h.session.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v; stderr: %s", name, err, h.stderr)
	}
	return res, textOf(res)
}

// textOf is the text of res's content.
func textOf(res *sdk.CallToolResult) string {
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String()
}

// messagesOf are the stored messages of conversation id in the
// workspace dir's store.
func messagesOf(t *testing.T, dir, id string) []history.Message {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatalf("the messages of conversation %s: %v", id, err)
	}
	return msgs
}

func TestMCPServeOffersTheWorkspaceToolsShellOnlyWithAllowShellAndAgentOnlyWithAgent(t *testing.T) {
	fakeAnthropic(t)
	workspaceTools := []string{"code_execution", "workspace--edit", "workspace--glob", "workspace--grep", "workspace--list", "workspace--read", "workspace--write"}
	for _, tt := range []struct {
		flags      []string
		want, not  []string
		outputOf   string // a tool whose output schema the host must be told
		background bool
	}{
		{nil, workspaceTools, []string{"shell--run", "agent--run", "code_execution--list"}, "", false},
		{[]string{"--allow-shell"}, append([]string{"shell--run"}, workspaceTools...), []string{"agent--run"}, "", false},
		{[]string{"--agent"}, append([]string{"agent--run"}, workspaceTools...), []string{"shell--run"}, "agent--run", false},
		{[]string{"--no-code-execution"}, workspaceTools[1:], []string{"code_execution"}, "", false},
	} {
		h := startMCPServe(t, append([]string{"--workspace", workspaceWith(t, nil)}, tt.flags...)...)
		names := h.names(t)
		for _, n := range tt.want {
			if !slices.Contains(names, n) {
				t.Errorf("%q: tools/list has no %s: %v", tt.flags, n, names)
			}
		}
		for _, n := range tt.not {
			if slices.Contains(names, n) {
				t.Errorf("%q: tools/list offers %s: %v", tt.flags, n, names)
			}
		}
		if tt.outputOf != "" {
			res, _ := h.session.ListTools(context.Background(), nil)
			for _, tl := range res.Tools {
				if tl.Name == tt.outputOf && tl.OutputSchema == nil {
					t.Errorf("%q: %s has no outputSchema", tt.flags, tl.Name)
				}
			}
		}
		if line := h.stderr.String(); !strings.Contains(line, "myelin mcp serve: serving the workspace ") || !strings.Contains(line, " over stdio; ") || !strings.Contains(line, strings.Join(names, ", ")) {
			t.Errorf("%q: stderr does not say what it serves (%v): %q", tt.flags, names, line)
		}
		if code := h.end(t); code != exitOK {
			t.Errorf("%q: exit %d when the host closed stdin, want 0; stderr: %s", tt.flags, code, h.stderr)
		}
	}
}

func TestMCPServeRunsAHostsCallAsMyelinsModelGetsIt(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\nbeta\n"})
	h := startMCPServe(t, "--workspace", dir, "--allow-shell", "--yes")
	res, text := h.call(t, context.Background(), "workspace--read", map[string]any{"path": "a.txt"}, nil)
	if res.IsError || !strings.Contains(text, "1\talpha\n") || !strings.Contains(text, "2\tbeta\n") {
		t.Fatalf("workspace--read a.txt: isError %v, text %q", res.IsError, text)
	}
	// a big result is spilled in the workspace, the host given its head
	// and the workspace--read call that pages the rest
	_, text = h.call(t, context.Background(), "shell--run", map[string]any{"command": "seq 1 30000"}, nil)
	_, ready, ok := strings.Cut(text, "Read on: workspace--read ")
	if !ok || len(text) > result.DefaultCap+1000 || !strings.HasPrefix(text, "1\n2\n3\n") {
		t.Fatalf("a big result reached the host whole, or without its head and the workspace--read call that pages it (%d chars): ...%q", len(text), text[max(0, len(text)-600):])
	}
	var page map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(strings.SplitN(ready, "\n", 2)[0])), &page); err != nil {
		t.Fatalf("the ready call's arguments %q: %v", ready, err)
	}
	from := fmt.Sprintf("%v\t%v\n", page["offset"], page["offset"])
	if res, text := h.call(t, context.Background(), "workspace--read", page, nil); res.IsError || !strings.HasPrefix(strings.TrimLeft(text, " "), from) {
		t.Fatalf("the ready call %v: isError %v, text %.300q", page, res.IsError, text)
	}
}

func TestMCPServeDeniesWhatThePolicyAsksAboutNamingTheFlagThatAllowsIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	h := startMCPServe(t, "--workspace", dir)
	res, text := h.call(t, context.Background(), "workspace--write", map[string]any{"path": "w.txt", "content": "x"}, nil)
	if !res.IsError || !strings.Contains(text, "--allow workspace--write") {
		t.Fatalf("a write the policy asks about, with no one to ask: isError %v, text %q; want an error naming --allow workspace--write", res.IsError, text)
	}
	if exists(filepath.Join(dir, "w.txt")) {
		t.Fatal("the denied write ran")
	}
	h.end(t)

	h = startMCPServe(t, "--workspace", dir, "--allow", "workspace--write")
	if res, text := h.call(t, context.Background(), "workspace--write", map[string]any{"path": "w.txt", "content": "x"}, nil); res.IsError {
		t.Fatalf("with --allow workspace--write: %q", text)
	}
	if !exists(filepath.Join(dir, "w.txt")) {
		t.Fatal("the allowed write did not run")
	}
}

// What the policy asks about is put to the host's user, when the host
// can be asked (elicitation, here at 2025-11-25, Claude Code's): the
// host's own calls and, with --agent, the agent's calls.
func TestMCPServeAsksTheHostsUserWhatThePolicyAsksAbout(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t,
		toolCallStep("toolu_1", "workspace--write", map[string]any{"path": "by-agent.txt", "content": "a"}),
		providertest.Step{Text: "written"})
	var mu sync.Mutex
	var asked []string
	host := hostOptions{version: "2025-11-25", elicit: func(p *sdk.ElicitParams) *sdk.ElicitResult {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, p.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"choice": "allow_once"}}
	}}
	h := startMCPServeFor(t, host, "--workspace", dir, "--agent")
	if res, text := h.call(t, context.Background(), "workspace--write", map[string]any{"path": "by-host.txt", "content": "h"}, nil); res.IsError || !exists(filepath.Join(dir, "by-host.txt")) {
		t.Fatalf("the host's write, its user allowing it: isError %v, %q", res.IsError, text)
	}
	if res, text := h.call(t, context.Background(), "agent--run", map[string]any{"task": "write it"}, nil); res.IsError || !exists(filepath.Join(dir, "by-agent.txt")) {
		t.Fatalf("the agent's write, the host's user allowing it: isError %v, %q", res.IsError, text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || !strings.Contains(asked[0], "by-host.txt") || !strings.Contains(asked[1], "by-agent.txt") {
		t.Fatalf("the host's user was asked %q; want the host's write, then the agent's", asked)
	}
}

// shell--run under mcp serve is sandboxed as in run: by default its
// commands write no directory outside the workspace; --sandbox-write
// lets them write one.
func TestMCPServeSandboxesShellRunAsRunDoes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux's")
	}
	dir, outside := workspaceWith(t, nil), t.TempDir()
	command := map[string]any{"command": "touch " + outside + "/x && echo done"}
	h := startMCPServe(t, "--workspace", dir, "--allow-shell", "--yes")
	h.call(t, context.Background(), "shell--run", command, nil)
	if exists(filepath.Join(outside, "x")) {
		t.Fatalf("shell--run wrote outside the workspace under mcp serve's default sandbox; stderr: %s", h.stderr)
	}
	h.end(t)
	h = startMCPServe(t, "--workspace", dir, "--allow-shell", "--yes", "--sandbox-write", outside)
	if _, text := h.call(t, context.Background(), "shell--run", command, nil); !exists(filepath.Join(outside, "x")) {
		t.Fatalf("with --sandbox-write %s, shell--run did not write it: %q", outside, text)
	}
}

func TestMCPServeUsage(t *testing.T) {
	out, errOut, code := cli(t, "mcp", "serve", "--help")
	if code != exitOK || !strings.HasPrefix(out, "Usage:\n  myelin mcp serve [--workspace DIR]") || !strings.Contains(out, "-agent-time duration") || !strings.Contains(out, "with --agent, anthropic, openai") {
		t.Fatalf("mcp serve --help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"extra"}, `takes no arguments, got ["extra"]`},
		{[]string{"--provider", "openai"}, "--provider set up the agent tool, which is offered only with --agent"},
		{[]string{"--model", "m", "--max-rounds", "3"}, "--max-rounds, --model set up the agent tool"},
		{[]string{"--agent-time", "1m"}, "--agent-time set up the agent tool"},
		{[]string{"--agent", "--agent-time", "0s"}, "--agent-time 0s: give a positive duration"},
		{[]string{"--agent", "--max-rounds", "0"}, "--max-rounds 0"},
		{[]string{"--conversation", "x"}, "--conversation is run's and chat's: a call of the agent tool names its conversation"},
		{[]string{"--wake-gap", "1s"}, "--wake-gap is run's and chat's: mcp serve runs no background scripts"},
		{[]string{"--allow", "bad rule ["}, `invalid value "bad rule [" for flag -allow`},
		{[]string{"--page-size", "-1"}, "--page-size -1: give a number of items"},
		{[]string{"--poll", "0s"}, "--poll 0s: give a positive duration"},
		{[]string{"--session-timeout", "5m"}, "--session-timeout is for --http"},
		{[]string{"--token", "0123456789abcdef-token"}, "--token is for --http"},
		{[]string{"--http", "127.0.0.1:0", "--session-timeout", "0s"}, "--session-timeout 0s: give a duration"},
	} {
		_, errOut, code := cli(t, append([]string{"mcp", "serve", "--workspace", t.TempDir()}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.says) || !strings.Contains(errOut, `Run "myelin mcp --help"`) {
			t.Errorf("mcp serve %q: exit %d, stderr %q; want a usage error saying %q", tt.args, code, errOut, tt.says)
		}
	}
}

// The agent tool runs a turn of myelin's agent on the fake provider: it
// stores a conversation, answers with the final answer (text, and
// structured content naming the conversation), reports progress as it
// goes, runs alongside the host's other calls, and continues the
// conversation a later call names. Its own calls are checked by the
// permission policy: a write no one can approve is denied, the denial
// naming the flag.
func TestMCPServeAgentToolRunsATurnStoredAsAConversation(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	hold := make(chan struct{})
	write := toolCallStep("toolu_2", "workspace--write", map[string]any{"path": "b.txt", "content": "b"})
	write.Hold = hold
	srv := fakeAnthropic(t,
		toolCallStep("toolu_1", "workspace--read", map[string]any{"path": "a.txt"}),
		write,
		providertest.Step{Text: "It says alpha.", Input: 10, Output: 3},
		providertest.Step{Text: "Still alpha."})
	h := startMCPServe(t, "--workspace", dir, "--agent")
	type called struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan called, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "agent--run", Arguments: map[string]any{"task": "what does a.txt say?"}}
		p.SetProgressToken("p1")
		res, err := h.session.CallTool(context.Background(), p)
		done <- called{res, err}
	}()
	// the agent's second request waits: its first round's progress has come
	waitFor(t, "the progress of the agent's first round", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.ContainsFunc(h.progress, func(p *sdk.ProgressNotificationParams) bool {
			return strings.HasPrefix(p.Message, "round 1: workspace--read done in ")
		})
	}, h.stderr)
	// the host's other calls run meanwhile
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if res, read := h.call(t, ctx, "workspace--read", map[string]any{"path": "a.txt"}, nil); res.IsError {
		t.Fatalf("a read while the agent runs: %q", read)
	}
	close(hold)
	c := <-done
	if c.err != nil {
		t.Fatalf("tools/call agent: %v; stderr: %s", c.err, h.stderr)
	}
	res, text := c.res, textOf(c.res)
	if c.res.IsError || !strings.HasPrefix(text, "It says alpha.") {
		t.Fatalf("the agent's result: isError %v, text %q; stderr: %s", c.res.IsError, text, h.stderr)
	}
	var out agentOutcome
	raw, _ := json.Marshal(c.res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil || out.Answer != "It says alpha." || out.Reason != "end_turn" || out.Rounds != 2 || out.Conversation == "" || out.AnswerCut {
		t.Fatalf("structured content %s (%v): want the answer, end_turn, 2 rounds and the conversation", raw, err)
	}
	if !strings.Contains(text, out.Conversation) {
		t.Errorf("the text does not name the conversation %s: %q", out.Conversation, text)
	}
	if got := lastUserText(t, srv, 1); !strings.Contains(got, "alpha") {
		t.Errorf("the agent's read of a.txt gave %q", got)
	}
	if got := lastUserText(t, srv, 2); !strings.Contains(got, "--allow workspace--write") || exists(filepath.Join(dir, "b.txt")) {
		t.Errorf("the agent's write, which no one could approve, gave %q (b.txt written: %v); want it denied naming --allow workspace--write", got, exists(filepath.Join(dir, "b.txt")))
	}
	msgs := messagesOf(t, dir, out.Conversation)
	if len(msgs) != 6 || msgs[0].Text() != "what does a.txt say?" || msgs[5].Text() != "It says alpha." {
		t.Fatalf("stored %d messages: %+v; want the task, two rounds and the answer", len(msgs), msgs)
	}
	// the conversation is a resource of the store's
	rl, err := h.session.ListResources(context.Background(), nil)
	if err != nil || !slices.ContainsFunc(rl.Resources, func(r *sdk.Resource) bool { return r.URI == "myelin://conversations/"+out.Conversation }) {
		t.Errorf("resources/list (%v) does not list the conversation %s", err, out.Conversation)
	}
	h.mu.Lock()
	last := 0.0
	for _, p := range h.progress {
		if p.ProgressToken != "p1" || p.Progress <= last || p.Message == "" {
			t.Errorf("progress %+v after %g: want token p1, a rising count and a message", p, last)
		}
		last = p.Progress
	}
	h.mu.Unlock()

	// a later call names the conversation: the agent goes on with it
	res, text = h.call(t, context.Background(), "agent--run", map[string]any{"task": "and now?", "conversation": out.Conversation}, nil)
	if res.IsError || !strings.HasPrefix(text, "Still alpha.") {
		t.Fatalf("the continued conversation's result: isError %v, text %q", res.IsError, text)
	}
	if n := len(srv.Request(3)["messages"].([]any)); n != 7 {
		t.Fatalf("the continued conversation's request has %d messages, want the 6 stored and the new task", n)
	}
}

// The progress the agent's own tools report comes as steps of the
// agent tool's, within its count: the host's progress must rise.
func TestAgentProgressGivesItsToolsProgressWithinItsCount(t *testing.T) {
	var got []tool.Progress
	ctx := tool.WithProgress(context.Background(), func(p tool.Progress) { got = append(got, p) })
	p := &agentProgress{ctx: ctx}
	p.event(agent.Event{Kind: agent.Stored, Message: &history.Message{Role: history.Assistant,
		Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c1", Name: "srv--work"}}}})
	inner := tool.WithProgress(ctx, p.inner)
	tool.ReportProgress(inner, tool.Progress{Done: 7, Total: 10, Message: "seven of ten"})
	tool.ReportProgress(inner, tool.Progress{Done: 1, Message: "again from one"})
	want := []string{"round 1: calling srv--work", "round 1: 7/10 seven of ten", "round 1: again from one"}
	if len(got) != len(want) {
		t.Fatalf("reported %+v; want %q", got, want)
	}
	for i, g := range got {
		if g.Message != want[i] || g.Done != float64(i+1) || g.Total != 0 {
			t.Errorf("report %d: %+v; want %q, done %d of no total", i, g, want[i], i+1)
		}
	}
}

// An answer longer than the inline cap is spilled in the text as any
// result is, and the structured content holds its head, marked as cut:
// whole, it would not fit the round bound with the text, and the host
// would get an error for a success.
func TestMCPServeAgentToolGivesALongAnswersHeadAsItsStructuredAnswer(t *testing.T) {
	answer := strings.Repeat("a long answer line\n", 3000)
	fakeAnthropic(t, providertest.Step{Text: answer})
	h := startMCPServe(t, "--workspace", workspaceWith(t, nil), "--agent")
	res, text := h.call(t, context.Background(), "agent--run", map[string]any{"task": "say a lot"}, nil)
	var out agentOutcome
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil || res.IsError || !out.AnswerCut || out.Answer != answer[:result.DefaultCap] {
		t.Fatalf("a %d-character answer: isError %v, structured answer of %d characters, cut %v (%v); text %.200q", len(answer), res.IsError, len(out.Answer), out.AnswerCut, err, text)
	}
	if !strings.Contains(text, "Read on: workspace--read ") {
		t.Fatalf("the long answer's text is not spilled with the call that pages it: ...%q", text[max(0, len(text)-400):])
	}
}

// --agent allows the host's calls of agent; a --deny rule naming it
// still wins.
func TestMCPServeAgentToolIsAllowedByAgentAndDeniedByADenyRule(t *testing.T) {
	fakeAnthropic(t, providertest.Step{Text: "done"})
	h := startMCPServe(t, "--workspace", workspaceWith(t, nil), "--agent", "--deny", "agent--run")
	if res, text := h.call(t, context.Background(), "agent--run", map[string]any{"task": "go"}, nil); !res.IsError || !strings.Contains(text, "the call of agent--run was denied by the permission policy") {
		t.Fatalf("agent under --deny agent--run: isError %v, text %q; want it denied", res.IsError, text)
	}
}

// The host's cancel ends the agent's turn: the answer as far as it came
// is stored, marked as cut, as run does when interrupted.
func TestMCPServeAgentToolEndsItsTurnWhenTheHostCancels(t *testing.T) {
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	srv := fakeAnthropic(t, providertest.Step{Text: "never sent", Hold: hold})
	h := startMCPServe(t, "--workspace", dir, "--agent")
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := h.session.CallTool(ctx, &sdk.CallToolParams{Name: "agent--run", Arguments: map[string]any{"task": "take your time"}})
		called <- err
	}()
	waitFor(t, "the agent's request", func() bool { return len(srv.Requests()) == 1 }, h.stderr)
	cancel()
	if err := <-called; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	var id string
	waitFor(t, "the cut answer to be stored", func() bool {
		store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
		if err != nil {
			return false
		}
		defer store.Close()
		convs, err := store.List(context.Background())
		if err != nil || len(convs) != 1 {
			return false
		}
		id = convs[0].ID
		msgs, err := store.Messages(context.Background(), id)
		return err == nil && len(msgs) == 2 && msgs[1].Cut
	}, h.stderr)
	if code := h.end(t); code != exitOK {
		t.Fatalf("exit %d after the cancel; stderr: %s", code, h.stderr)
	}
}

// A host that quits (closes mcp serve's stdin) while the agent runs ends
// its turn as a cancel does: mcp serve stores the answer as far as it
// came, then exits 0.
func TestMCPServeStoresTheAgentsCutAnswerWhenTheHostQuitsMidTurn(t *testing.T) {
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	defer close(hold)
	srv := fakeAnthropic(t, providertest.Step{Text: "never sent", Hold: hold})
	h := startMCPServe(t, "--workspace", dir, "--agent")
	go h.session.CallTool(context.Background(), &sdk.CallToolParams{Name: "agent--run", Arguments: map[string]any{"task": "take your time"}})
	waitFor(t, "the agent's request", func() bool { return len(srv.Requests()) == 1 }, h.stderr)
	if code := h.end(t); code != exitOK {
		t.Fatalf("exit %d when the host quit mid-turn; stderr: %s", code, h.stderr)
	}
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	convs, err := store.List(context.Background())
	if err != nil || len(convs) != 1 {
		t.Fatalf("%d conversations (%v), want the agent's", len(convs), err)
	}
	if msgs, err := store.Messages(context.Background(), convs[0].ID); err != nil || len(msgs) != 2 || !msgs[1].Cut {
		t.Fatalf("stored %+v (%v); want the task and the cut answer, stored before mcp serve exited", msgs, err)
	}
}

// When an MCP server behind mcp serve changes its tools, the host is told
// (tools/list_changed) and lists the new set.
func TestMCPServeTellsTheHostWhenTheToolsOfItsMCPServersChange(t *testing.T) {
	hs := httptest.NewServer(mcptest.Asker())
	t.Cleanup(hs.Close) // after mcp serve ends (cleanups run last first), its connection closed
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": hs.URL}}})
	if err := os.WriteFile(cfg, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	h := startMCPServe(t, "--workspace", workspaceWith(t, nil), "--mcp-config", cfg, "--allow", "asker--*")
	if names := h.names(t); !slices.Contains(names, "asker--grow") || slices.Contains(names, "asker--grown") {
		t.Fatalf("before the change: %v", names)
	}
	if res, text := h.call(t, context.Background(), "asker--grow", map[string]any{}, nil); res.IsError {
		t.Fatalf("asker--grow: %q", text)
	}
	waitFor(t, "tools/list_changed", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.changed > 0
	}, h.stderr)
	if names := h.names(t); !slices.Contains(names, "asker--grown") {
		t.Fatalf("after tools/list_changed, tools/list has no asker--grown: %v", names)
	}
	if !strings.Contains(h.stderr.String(), "the MCP servers' tools changed; offering the new set") {
		t.Errorf("stderr does not say the tools changed: %s", h.stderr)
	}
}

// A rule of one word names a tool only when the word looks like a tool's
// name (it holds "--" or "_"); any other word names a command of
// shell--run's. So every tool myelin offers must look like one, or the
// --allow a denial names for it would allow nothing (the agent tool was
// once named "agent").
func TestEveryToolMCPServeOffersIsNamedByAOneWordRule(t *testing.T) {
	fakeAnthropic(t)
	h := startMCPServe(t, "--workspace", workspaceWith(t, nil), "--agent", "--allow-shell", "--delegate")
	names := h.names(t)
	if !slices.Contains(names, mcpAgentName) || !slices.Contains(names, "agent--delegate") {
		t.Fatalf("tools/list = %v, want the agent tool and agent--delegate among them", names)
	}
	for _, name := range names {
		r, err := permission.ParseRule(name, permission.Allow, "test")
		if err != nil || r.Tool != name || r.Command != nil {
			t.Errorf("the rule %q names tool %q, command %q (err %v): want the tool %s itself", name, r.Tool, r.Command, err, name)
		}
	}
	h.end(t)
}

// --page-size reaches the server: a page of tools/list holds that many,
// and says where the next one starts.
func TestMCPServePagesItsListsAsPageSizeSays(t *testing.T) {
	h := startMCPServe(t, "--workspace", t.TempDir(), "--page-size", "2")
	res, err := h.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v; stderr: %s", err, h.stderr)
	}
	if len(res.Tools) != 2 || res.NextCursor == "" {
		t.Fatalf("a page of tools/list under --page-size 2: %d tools, next cursor %q; want 2 and a cursor", len(res.Tools), res.NextCursor)
	}
}

// --no-conversation-resources leaves the store's conversations out of
// the resources (the permission rules do not govern them): neither
// listed nor read.
func TestMCPServeWithoutConversationResourcesListsNoConversation(t *testing.T) {
	dir := t.TempDir()
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "c1"
	if err := store.Create(context.Background(), history.Conversation{ID: id}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	for _, c := range []struct {
		args  []string
		offer bool
	}{{nil, true}, {[]string{"--no-conversation-resources"}, false}} {
		h := startMCPServe(t, append([]string{"--workspace", dir}, c.args...)...)
		rl, err := h.session.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatalf("%v: resources/list: %v", c.args, err)
		}
		var uris []string
		for _, r := range rl.Resources {
			uris = append(uris, r.URI)
		}
		if listed := slices.Contains(uris, "myelin://conversations/"+id); listed != c.offer {
			t.Errorf("%v: resources %v; want the conversation listed: %v", c.args, uris, c.offer)
		}
		if says := strings.Contains(h.stderr.String(), "; no conversations (--no-conversation-resources)"); says == c.offer {
			t.Errorf("%v: stderr %q; want it to say whether conversations are offered", c.args, h.stderr.String())
		}
		if !c.offer {
			if _, err := h.session.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "myelin://conversations/" + id}); err == nil {
				t.Errorf("%v: the conversation was read", c.args)
			}
		}
	}
}
