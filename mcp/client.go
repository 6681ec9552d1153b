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
	// Dir is the workspace root: stdio servers run in it (or in their
	// entry's cwd, relative to it) and their stderr goes to
	// Dir/.myelin/logs/mcp-<server>.log.
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
	tools   []*tool.Tool
}

// Start connects every server in parallel, each within the start timeout,
// and lists their tools. A server that fails is left out (its Status says
// why; Failures reports it) and the others work. Close the Set when done.
func Start(ctx context.Context, servers []Server, o Options) *Set {
	if o.Dir == "" {
		o.Dir = "."
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "myelin", Version: o.Version}, nil)
	// The workspace is the one root: servers that take roots (the
	// filesystem server does) keep to it, as myelin's own tools do.
	if abs, err := filepath.Abs(o.Dir); err == nil {
		client.AddRoots(&sdk.Root{URI: (&url.URL{Scheme: "file", Path: abs}).String(), Name: "workspace"})
	}
	set := &Set{}
	var wg sync.WaitGroup
	for _, cfg := range servers {
		s := &server{cfg: cfg, opts: &o, client: client}
		set.servers = append(set.servers, s)
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	var refs []ToolRef
	for _, s := range set.servers {
		for _, t := range s.listed {
			refs = append(refs, ToolRef{s.cfg.Name, t.Name})
		}
	}
	names := ToolNames(refs)
	for _, s := range set.servers {
		for _, t := range s.listed {
			name := names[ToolRef{s.cfg.Name, t.Name}]
			s.offered = append(s.offered, name)
			set.tools = append(set.tools, s.tool(name, t))
		}
		slices.Sort(s.offered)
	}
	slices.SortFunc(set.tools, func(a, b *tool.Tool) int { return strings.Compare(a.Name, b.Name) })
	return set
}

// Tools are the tools of the servers that started, each under its
// ToolNames name.
func (set *Set) Tools() []*tool.Tool { return set.tools }

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
	client *sdk.Client
	listed []*sdk.Tool // as listed at start
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
	s.listed = tools
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
			err = fmt.Errorf("no answer to initialize within %v: %v", s.opts.startTimeout(), err)
		case proc != nil:
			err = proc.explain(err)
		}
		return nil, fmt.Errorf("connecting: %v", err)
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
		return nil, fmt.Errorf("%s, and restarting it failed: %v", why, err)
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
		// The call bounds itself by the server's timeout and says so; the
		// dispatcher's bound is only a backstop.
		Timeout: s.cfg.CallTimeout() + 5*time.Second,
		Rerun:   mayRerun(s.cfg.Rerun, t.Annotations),
		Handler: func(ctx context.Context, input json.RawMessage) result.Result {
			return s.call(ctx, t.Name, input)
		},
	}
}

// inputSchema converts the schema a server listed; one that does not
// convert leaves the input unchecked (the server still checks it).
func inputSchema(v any) *jsonschema.Schema {
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
func (s *server) call(ctx context.Context, name string, input json.RawMessage) result.Result {
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
	_, err = l.sess.CallTool(withSlot(callCtx, sl), &sdk.CallToolParams{Name: name, Arguments: input})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return fail("the call was cancelled")
	case callCtx.Err() != nil:
		return fail("no answer within %v (the server's timeout); the call was cancelled", s.cfg.CallTimeout())
	case strings.Contains(err.Error(), errTooLarge), sl.answeredWithError():
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
