package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultMaxReply     = 64 << 20
	DefaultGrace        = 2 * time.Second
)

// Options say how Start connects servers. The zero value works: servers
// run in the current directory and their logs go under it.
type Options struct {
	// Dir is the workspace root: an entry's relative cwd is relative to
	// it, servers get it as their one root, and a stdio server's stderr
	// goes to Dir/.myelin/logs/mcp-<server>.log. A stdio server whose
	// entry names no cwd does not run in it, but in an empty directory of
	// its own (workDir).
	Dir string
	// Lookup reads myelin's environment (os.LookupEnv when nil) for the
	// PATH and HOME a stdio server gets.
	Lookup func(string) (string, bool)
	// StartTimeout bounds connecting to a server and listing its tools.
	StartTimeout time.Duration
	// MaxReply bounds one reply of a server, in bytes. A reply over it is
	// not read, and the call is an error that says so; the session goes on.
	MaxReply int64
	// Grace is how long a stdio server has to exit after its stdin is
	// closed, and again after SIGTERM, before it is killed.
	Grace time.Duration
	// Version is the client version myelin tells servers.
	Version string
	// Auth is how HTTP servers that ask for authorisation are signed in
	// to (auth.go).
	Auth Auth
	// Elicitor asks the user when a server wants input during a call;
	// nil declines every such request (no one to ask), saying so through
	// Notify.
	Elicitor Elicitor
	// Sampler completes a server's sampling request with the
	// conversation's model; nil lets no server sample. A server samples
	// only when its entry's "sampling" budget allows it too.
	Sampler Sampler
	// Progress, when set, is given the progress notifications of calls in
	// flight (cmd/myelin shows them on the tool's line); nil asks servers
	// for none.
	Progress func(Progress)
	// Notify, when set, is told what servers do that the user should see:
	// a declined elicitation, a sampling request and its cost.
	Notify func(string)
}

func (o *Options) notify(msg string) {
	if o.Notify != nil {
		o.Notify(msg)
	}
}

func (o *Options) maxReply() int64 {
	if o.MaxReply > 0 {
		return o.MaxReply
	}
	return DefaultMaxReply
}

func (o *Options) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return DefaultStartTimeout
}

func (o *Options) grace() time.Duration {
	if o.Grace > 0 {
		return o.Grace
	}
	return DefaultGrace
}

// States of a server in Status.
const (
	StateRunning = "running" // connected, its tools offered
	StateFailed  = "failed"  // did not start; its tools are left out
	StateExited  = "exited"  // died after starting; restarted on the next call
	StateClosed  = "closed"  // closed by Close
)

// Status is what `myelin mcp list` shows of a server.
type Status struct {
	Name  string
	Type  string // "stdio" or "http"
	State string
	// Err says why the server failed or exited.
	Err string
	// Tools are the names its tools are offered under, sorted.
	Tools []string
}

// Set is the connected MCP servers of one myelin process, and the tools
// they offer. It is safe for concurrent use.
type Set struct {
	servers []*server

	mu      sync.Mutex
	tools   []*tool.Tool
	version uint64 // changes when a server's tools do (Version)
}

// Start connects every server in parallel, each within the start timeout,
// and lists their tools. A server that fails is left out (its Status says
// why; Failures reports it) and the others work. Close the Set when done.
func Start(ctx context.Context, servers []Server, o Options) *Set {
	if o.Dir == "" {
		o.Dir = "."
	}
	set := &Set{}
	var wg sync.WaitGroup
	for _, cfg := range servers {
		s := &server{cfg: cfg, opts: &o, set: set}
		s.client = s.newClient()
		set.servers = append(set.servers, s)
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	set.rename()
	return set
}

// newClient is the server's own client: the requests and notifications
// it gets are the server's, handled with its config (its sampling budget,
// its log).
func (s *server) newClient() *sdk.Client {
	caps := &sdk.ClientCapabilities{
		RootsV2:     &sdk.RootCapabilities{},
		Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}},
	}
	opts := &sdk.ClientOptions{
		Capabilities:                caps,
		ElicitationHandler:          s.elicit,
		ToolListChangedHandler:      s.toolsChanged,
		ProgressNotificationHandler: s.progress,
		LoggingMessageHandler:       s.logMessage,
	}
	if b := s.cfg.Sampling; b != nil && s.opts.Sampler != nil {
		s.budget = &budget{maxReq: b.Requests, maxTok: b.Tokens}
		opts.CreateMessageHandler = s.sample
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "myelin", Version: s.opts.Version}, opts)
	// The workspace is the one root: servers that take roots (the
	// filesystem server does) keep to it, as myelin's own tools do.
	if abs, err := filepath.Abs(s.opts.Dir); err == nil {
		client.AddRoots(&sdk.Root{URI: (&url.URL{Scheme: "file", Path: abs}).String(), Name: "workspace"})
	}
	return client
}

// rename names the tools the servers list now (ToolNames over all of
// them) and makes them the Set's tools.
func (set *Set) rename() {
	set.mu.Lock()
	defer set.mu.Unlock()
	listed := make([][]*sdk.Tool, len(set.servers))
	var refs []ToolRef
	for i, s := range set.servers {
		s.mu.Lock()
		listed[i] = s.listed
		s.mu.Unlock()
		for _, t := range listed[i] {
			refs = append(refs, ToolRef{s.cfg.Name, t.Name})
		}
	}
	names := ToolNames(refs)
	var tools []*tool.Tool
	for i, s := range set.servers {
		var offered []string
		for _, t := range listed[i] {
			name := names[ToolRef{s.cfg.Name, t.Name}]
			offered = append(offered, name)
			tools = append(tools, s.tool(name, t))
		}
		slices.Sort(offered)
		s.mu.Lock()
		s.offered = offered
		s.mu.Unlock()
	}
	slices.SortFunc(tools, func(a, b *tool.Tool) int { return strings.Compare(a.Name, b.Name) })
	set.tools = tools
	set.version++
}

// Tools are the tools the servers offer now, each under its ToolNames
// name. A server that says its tools changed (notifications/tools/
// list_changed) has them listed again, and the next Tools gives the new
// set: a conversation asks between turns, so that a turn keeps one list.
func (set *Set) Tools() []*tool.Tool {
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.tools
}

// Version changes whenever Tools would give a different set.
func (set *Set) Version() uint64 {
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.version
}

// Status gives each server's state, in the order of the config (by name).
func (set *Set) Status() []Status {
	out := make([]Status, 0, len(set.servers))
	for _, s := range set.servers {
		out = append(out, s.status())
	}
	return out
}

// Failures are the servers that did not start, one error each, to be
// reported once.
func (set *Set) Failures() []error {
	var errs []error
	for _, s := range set.servers {
		if st := s.status(); st.State == StateFailed {
			errs = append(errs, fmt.Errorf("MCP server %s did not start, its tools are left out: %s", st.Name, st.Err))
		}
	}
	return errs
}

// Close closes every server: a stdio server's stdin is closed, and it is
// killed if it has not exited after the grace period (twice, with SIGTERM
// between).
func (set *Set) Close() error {
	var wg sync.WaitGroup
	for _, s := range set.servers {
		wg.Go(s.close)
	}
	wg.Wait()
	return nil
}

// server is one configured server and its current session.
type server struct {
	cfg    Server
	opts   *Options
	set    *Set
	client *sdk.Client
	budget *budget  // what is left of its sampling budget; nil: it may not sample
	calls  sync.Map // progress token → the offered name of the call's tool
	// inflight are the contexts of its calls in flight, by a number of
	// each: what it asks during a call is handed on with them (Calls).
	inflight sync.Map

	logMu sync.Mutex
	notes *workspace.Log // where its logging notifications go, once one came

	listed []*sdk.Tool // as last listed (guarded by mu once started)
	// offered are the names listed tools go by.
	offered []string

	restart sync.Mutex // one restart at a time, however many calls wait
	mu      sync.Mutex
	link    *link // the current session, nil when there is none
	state   string
	err     string
	closed  bool
}

// link is one session with a server, and how it ended.
type link struct {
	sess  *sdk.ClientSession
	proc  *process      // the stdio server's process
	ended chan struct{} // closed when the session has ended; why is set then
	why   string
}

func (s *server) start(ctx context.Context) {
	if s.cfg.Problem != "" {
		s.setState(StateFailed, s.cfg.Problem)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.startTimeout())
	defer cancel()
	l, err := s.connect(ctx)
	if err != nil {
		s.setState(StateFailed, err.Error())
		return
	}
	var tools []*sdk.Tool
	for t, err := range l.sess.Tools(ctx, nil) {
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no answer to tools/list within %v (the start timeout, which connecting counts toward)", s.opts.startTimeout())
			}
			s.setState(StateFailed, fmt.Sprintf("listing its tools: %v", err))
			s.drop()
			return
		}
		tools = append(tools, t)
	}
	s.mu.Lock()
	s.listed = tools
	s.mu.Unlock()
}

// connect starts a session (and for stdio, the process) and records it.
func (s *server) connect(ctx context.Context) (*link, error) {
	var tr sdk.Transport
	var proc *process
	if s.cfg.Stdio() {
		p, err := startProcess(s.cfg, s.opts)
		if err != nil {
			return nil, err
		}
		proc, tr = p, p.conn.transport()
	} else {
		tr = httpTransport(s.cfg, s.opts)
	}
	sess, err := s.client.Connect(ctx, tr, nil)
	if err != nil {
		// Whether the time ran out is read before the server is stopped:
		// a server myelin closed exits too, and that exit is not why.
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		if proc != nil {
			go proc.stop(s.opts.grace())
		}
		switch {
		case timedOut && proc != nil:
			err = fmt.Errorf("no answer to initialize within %v, so myelin stopped it; the end of its stderr (in %s): %s", s.opts.startTimeout(), proc.log, logTail(proc.log, proc.logFrom))
		case timedOut:
			err = fmt.Errorf("no answer to initialize within %v: %w", s.opts.startTimeout(), err)
		case proc != nil:
			err = proc.explain(err)
		}
		return nil, fmt.Errorf("connecting: %w", err)
	}
	// Servers send no log messages until asked to (the SDK's do not):
	// those of level info and above go to the server's log file.
	if caps := sess.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
		if err := sess.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
			s.opts.notify(fmt.Sprintf("MCP server %s: asking for its log messages failed: %v", s.cfg.Name, err))
		}
	}
	l := &link{sess: sess, proc: proc, ended: make(chan struct{})}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.link, s.state, s.err = l, StateRunning, ""
	}
	s.mu.Unlock()
	if closed { // Close came while this was starting
		sess.Close()
		if proc != nil {
			proc.stop(s.opts.grace())
		}
		return nil, errors.New("myelin has closed it")
	}
	go s.watch(l)
	return l, nil
}

// watch says how the session ended, once it has, and marks the server
// exited when the session was still its current one.
func (s *server) watch(l *link) {
	err := l.sess.Wait()
	proc := l.proc
	why := "the session ended"
	if proc != nil {
		select {
		case <-proc.done:
			why = "the server exited (" + proc.exited() + ")"
		case <-time.After(s.opts.grace()):
			why = "the server closed its output"
			go proc.stop(s.opts.grace())
		}
	} else if err != nil {
		why = "the session ended: " + err.Error()
	}
	l.why = why
	close(l.ended)
	s.mu.Lock()
	if s.link == l {
		s.link = nil
		if !s.closed {
			s.state, s.err = StateExited, why
		}
	}
	s.mu.Unlock()
}

func (s *server) setState(state, err string) {
	s.mu.Lock()
	s.state, s.err = state, err
	s.mu.Unlock()
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Name: s.cfg.Name, Type: s.cfg.Type, State: s.state, Err: s.err, Tools: s.offered}
}

// drop ends the current session, if any.
func (s *server) drop() {
	s.mu.Lock()
	l := s.link
	s.link = nil
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.sess.Close()
	if l.proc != nil {
		l.proc.stop(s.opts.grace())
	}
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	if s.state == StateRunning || s.state == StateExited {
		s.state = StateClosed
	}
	s.mu.Unlock()
	s.drop()
	s.closeNotes()
}

const restartFailed = "; restarting it failed: "

// live returns the session, restarting a server that died.
func (s *server) live(ctx context.Context) (*link, error) {
	s.restart.Lock()
	defer s.restart.Unlock()
	s.mu.Lock()
	l, closed, why := s.link, s.closed, s.err
	s.mu.Unlock()
	if closed {
		return nil, errors.New("myelin has closed it")
	}
	if l != nil {
		return l, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.startTimeout())
	defer cancel()
	why, _, _ = strings.Cut(why, restartFailed) // said once, however many restarts failed
	l, err := s.connect(ctx)
	if err != nil {
		s.setState(StateExited, why+restartFailed+err.Error())
		return nil, fmt.Errorf("%s, and restarting it failed: %w", why, err)
	}
	return l, nil
}

// tool is the myelin tool for one of the server's tools.
func (s *server) tool(name string, t *sdk.Tool) *tool.Tool {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("The tool %s of the MCP server %s.", t.Name, s.cfg.Name)
	}
	return &tool.Tool{
		Name:        name,
		Description: desc,
		InputSchema: inputSchema(t.InputSchema),
		// Kept so that a host myelin serves the tool to (myelin mcp serve)
		// is told it too, and checks its structured content as it would
		// have against the server itself.
		OutputSchema: outputSchema(t.OutputSchema),
		// The call bounds itself by the server's timeout and says so; the
		// dispatcher's bound is only a backstop.
		Timeout:     s.cfg.CallTimeout() + 5*time.Second,
		Rerun:       mayRerun(s.cfg.Rerun, t.Annotations),
		ReadOnly:    readOnly(t.Annotations),
		Destructive: destructive(t.Annotations),
		Handler: func(ctx context.Context, input json.RawMessage) result.Result {
			return s.call(ctx, t.Name, name, input)
		},
	}
}

// inputSchema converts the schema a server listed; one that does not
// convert leaves the input unchecked (the server still checks it).
func inputSchema(v any) *jsonschema.Schema { return listedSchema(v) }

// outputSchema converts the output schema a server listed. One that does
// not convert, or that is not an object's (the only kind MCP allows: a
// host such as the Node SDK's client refuses a tool list holding another),
// is left out, and with it only the host's check: the tool's structured
// content still reaches it.
func outputSchema(v any) *jsonschema.Schema {
	if v == nil {
		return nil
	}
	s := listedSchema(v)
	if s == nil || s.Type != "object" {
		return nil
	}
	return s
}

// listedSchema converts a schema a server listed, nil when it does not
// convert or resolve.
func listedSchema(v any) *jsonschema.Schema {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var s jsonschema.Schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil
	}
	return &s
}

// call runs one tool call: the server is restarted first if it died, the
// call is bounded by the server's call timeout, and the raw result goes to
// result.FromMCP.
func (s *server) call(ctx context.Context, name, offered string, input json.RawMessage) result.Result {
	fail := func(format string, a ...any) result.Result {
		return result.Error(fmt.Sprintf("MCP server %s, tool %s: ", s.cfg.Name, name) + fmt.Sprintf(format, a...))
	}
	l, err := s.live(ctx)
	if err != nil {
		return fail("the server is not running: %v", err)
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout())
	defer cancel()
	sl := &slot{}
	defer sl.finish()
	params := &sdk.CallToolParams{Name: name, Arguments: input}
	defer s.inFlight(ctx)()
	defer s.withProgress(params, offered)()
	_, err = l.sess.CallTool(withSlot(callCtx, sl), params)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fail("the call was cancelled")
	case callCtx.Err() != nil:
		return fail("no answer within %v (the server's timeout); the call was cancelled", s.cfg.CallTimeout())
	case errors.Is(err, errReplyTooLarge), sl.answeredWithError():
		// An error reply is the server's answer: the session is alive,
		// and there is no exit to wait for.
		return fail("%v", unwrapRPC(err))
	default:
		if why := s.died(l); why != "" {
			again := "the server is restarted on the next call"
			if !s.cfg.Stdio() {
				again = "a new session is started on the next call"
			}
			return fail("%s during the call, which may have run in part; %s", why, again)
		}
		return fail("%v", unwrapRPC(err))
	}
	if r, ok := sl.result(); ok {
		return r
	}
	if sl.isNull() {
		return fail(`the server's reply has "result": null, which is not a tool result`)
	}
	raw := sl.get()
	if raw == nil {
		return fail("the server's reply held no result")
	}
	r, err := result.FromMCP(raw)
	if err != nil {
		return fail("%v", err)
	}
	return r
}

// died says how the session ended, if it has, waiting a moment for the
// process to be reaped so that the exit status can be told (watch waits
// up to the grace period for the process after the session).
func (s *server) died(l *link) string {
	select {
	case <-l.ended:
		return l.why
	case <-time.After(2 * s.opts.grace()):
		return ""
	}
}

// unwrapRPC gives the server's own error message without the SDK's
// prefixes.
func unwrapRPC(err error) string {
	var w *jsonrpc.Error
	if errors.As(err, &w) {
		return w.Message
	}
	return err.Error()
}
