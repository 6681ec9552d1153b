package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/httpguard"
	"github.com/myelin-run/myelin/server"
	"github.com/myelin-run/myelin/tool"
)

const serveUsage = `Usage:
  myelin serve [flags]
      Serve the HTTP API (docs/serve.md): conversations, turns started and
      cancelled over HTTP, their events live as server-sent events, the
      stored messages, the tools and the spill files. It listens on the
      loopback interface unless told otherwise; on any other address it
      needs a token (--token or MYELIN_TOKEN), checked on every request: 16
      characters or more of visible ASCII. --cors-origin needs a token too.
      It stops on SIGTERM (what Docker, systemd and Kubernetes stop
      services with) and on SIGINT (Ctrl-C) alike: new turns are refused
      (503), running turns have --shutdown-grace to finish, then are
      cancelled as a cancel does, their answers stored as cut and their
      watchers told; it exits 0. A second signal cancels them at once.
      It logs one line to stderr per request and per turn ended
      (--log-format text or json), never a token, prompt or answer.
      With --worker on a Postgres store (--store postgres://...), several
      serve processes on several hosts share the turns: each turn is queued
      with its prompt and run by one of them, and its events reach a client
      of any (docs/scale.md); such a process that stops hands its running
      turns back to the queue at once, for another to continue, and a turn
      whose key's rate limit would hold its request more than 5 s goes back
      to the queue until then while other turns run (docs/ratelimits.md).
      What MCP servers ask during a call (an elicitation, a sampling
      request) is an event of the conversation whose call it is, which its
      clients answer over the API; so is a tool call the permission policy
      asks about (an approval event, denied after --approval-timeout);
      background scripts' wakes are events too, each followed by its turn
      (docs/serve.md).
`

// serveFlags are serve's flags: the agent's, and where and how to listen.
type serveFlags struct {
	agentFlags
	addr    string
	token   string
	cors    []string
	worker  bool
	workers int
	lease   time.Duration
	// elicitTimeout is how long an MCP server's elicitation waits for a
	// client's answer before it is declined.
	elicitTimeout time.Duration
	// approvalTimeout is how long a tool call the policy asks about waits
	// for a client's decision before it is denied.
	approvalTimeout time.Duration
	// logFormat is how the request and turn lines are written to stderr:
	// text or json (log/slog's handlers).
	logFormat string
	// grace is how long running turns have to finish once serve is told
	// to stop, before they are cancelled.
	grace time.Duration
	// streams and streamsPerClient bound the event streams open at once,
	// in all and from one client address (server.Server's Watchers and
	// WatchersPerClient).
	streams, streamsPerClient int
}

// defaultShutdownGrace is how long serve lets running turns finish when
// told to stop unless --shutdown-grace says: under the 90 s Docker and
// systemd wait by default, as much as Kubernetes gives (30 s) — set
// terminationGracePeriodSeconds above it.
const defaultShutdownGrace = 30 * time.Second

// maxWorkers bounds --workers: each runs a turn with store connections
// of its own (the pool's size is counted from it).
const maxWorkers = 10000

// maxStreams bounds --max-streams and --max-streams-per-client: each
// stream is a connection (a file descriptor) and its buffers.
const maxStreams = 1_000_000

// minLease is the shortest --lease: a claim renewed every third of it is
// lost to a busy host's pauses below a second.
const minLease = time.Second

// notServeFlags are run's and chat's flags that pick a conversation or
// wait for one: serve's requests name their conversations, so serve does
// not offer them.
var notServeFlags = map[string]bool{"conversation": true, "continue": true, "fork": true, "wait": true}

// serveFlagSet is the agent's flags less notServeFlags, and serve's own.
func (f *serveFlags) flagSet() *flag.FlagSet {
	fs := newFlagSet("serve")
	f.agentFlags.set("serve").VisitAll(func(fl *flag.Flag) {
		if !notServeFlags[fl.Name] {
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	return fs
}

// refusedFlag is the first flag of the refused set (notServeFlags,
// notMCPServeFlags) args give (before a "--"), "" for none.
func refusedFlag(args []string, refused map[string]bool) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if refused[name] {
			return name
		}
	}
	return ""
}

// check refuses serve's own flags out of their ranges; set holds the
// flags the command line gave.
func (f *serveFlags) check(set map[string]bool) error {
	if _, port, err := net.SplitHostPort(f.addr); err != nil {
		return fmt.Errorf("--addr %q: give HOST:PORT, e.g. 127.0.0.1:7700 (%w)", f.addr, err)
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--addr %s: the port must be 0 (a free one) to 65535", f.addr)
	}
	switch {
	case f.workers < 0 || f.workers > maxWorkers:
		return fmt.Errorf("--workers %d: give how many turns this process runs at once, 0 (none: it only queues turns) to %d (default %d)", f.workers, maxWorkers, defaultWorkers)
	case f.lease < minLease:
		return fmt.Errorf("--lease %s: give a duration of %s or more (default %s)", f.lease, minLease, history.DefaultLease)
	case f.elicitTimeout <= 0:
		return fmt.Errorf("--elicitation-timeout %s: give a duration > 0 (default %s)", f.elicitTimeout, server.DefaultElicitTimeout)
	case f.approvalTimeout <= 0:
		return fmt.Errorf("--approval-timeout %s: give a duration > 0 (default %s)", f.approvalTimeout, server.DefaultApprovalTimeout)
	case f.grace < 0:
		return fmt.Errorf("--shutdown-grace %s: give 0 (cancel running turns at once) or more (default %s)", f.grace, defaultShutdownGrace)
	case f.streams < 1 || f.streams > maxStreams:
		return fmt.Errorf("--max-streams %d: give how many event streams the server keeps open at once, 1 to %d (default %d)", f.streams, maxStreams, server.DefaultWatchers)
	case f.streamsPerClient < 1 || f.streamsPerClient > maxStreams:
		return fmt.Errorf("--max-streams-per-client %d: give how many event streams one client address may keep open at once, 1 to %d (default %d)", f.streamsPerClient, maxStreams, server.DefaultWatchersPerClient)
	case (set["workers"] || set["lease"]) && !f.worker:
		return errors.New("--workers and --lease go with --worker")
	case set["shutdown-grace"] && f.worker:
		return errors.New("--shutdown-grace has nothing to wait for with --worker: a stopping worker hands its running turns back to the queue at once, for another to continue")
	}
	return nil
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, code, done := parseServe(args, stdout, stderr)
	if done {
		return code
	}
	flush, err := startTelemetry(ctx, "serve", stderr)
	if err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	defer flush() // after the turns and workers stop: their last spans are sent
	api := c.newAPI(stderr)
	s, _, err := openAgent(ctx, c.agentFlags, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	defer s.close()
	s.agent.KeepRequests = true // the API serves each request as it was sent
	s.agent.Lease = c.lease
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	serveSession(api, s)
	stopWorkers := func() {}
	if c.worker {
		stop, err := startWorkers(ctx, api, s.store, c.dsn, c.workers, c.lease, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "myelin serve: %v\n", err)
			return exitError
		}
		stopWorkers = sync.OnceFunc(stop)
		defer stopWorkers() // before the store closes
	}
	err = c.serve(ctx, api, ln, s.ws.Dir(), stopWorkers, stderr)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	return exitOK
}

// serveSetup is serve as its command line sets it up: the flags, checked,
// and what was made of them.
type serveSetup struct {
	serveFlags
	logger   *slog.Logger
	bgLimits background.Limits
	dsn      string // the store as given (with --worker, store is a pool of it)
}

// parseServe reads serve's flags and checks them, alone and together.
// done: serve ends here (help, or a usage error), with code.
func parseServe(args []string, stdout, stderr io.Writer) (c *serveSetup, code int, done bool) {
	c = &serveSetup{}
	f := &c.serveFlags
	fs := f.flagSet()
	fs.StringVar(&f.addr, "addr", "127.0.0.1:7700", "listen on `HOST:PORT` (a port of 0 picks a free one)")
	fs.StringVar(&f.token, "token", "", "the `TOKEN` every request must send as Authorization: Bearer TOKEN (default $MYELIN_TOKEN); required off the loopback interface")
	fs.Func("cors-origin", "let pages of `ORIGIN` (scheme://host[:port], or * for any) call the API from a browser, sending the token (needs --token); repeat for several (default: none)", func(v string) error {
		if v != "*" && !strings.Contains(v, "://") {
			return fmt.Errorf("%q is not an origin: give scheme://host[:port], as a browser sends it, or *", v)
		}
		f.cors = append(f.cors, strings.TrimSuffix(v, "/"))
		return nil
	})
	fs.BoolVar(&f.worker, "worker", false, "queue turns on the Postgres store (--store postgres://...) and run them here or on any serve --worker process sharing it (docs/scale.md)")
	fs.IntVar(&f.workers, "workers", defaultWorkers, fmt.Sprintf("with --worker, how many turns this process runs at once (`N`, 0 to %d; 0 runs none: it only queues turns and serves events)", maxWorkers))
	fs.DurationVar(&f.elicitTimeout, "elicitation-timeout", server.DefaultElicitTimeout, "how long (a `DURATION`) an MCP server's question (an elicitation event) waits for a client's answer before it is declined")
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", server.DefaultApprovalTimeout, "how long (a `DURATION`) a tool call the permission policy asks about (an approval event) waits for a client's decision before it is denied")
	fs.DurationVar(&f.lease, "lease", history.DefaultLease, "how long a turn's claim on its conversation lasts unrenewed (`DURATION`, 1s or more): a worker that died is taken over after it, or at once on its own host")
	fs.DurationVar(&f.grace, "shutdown-grace", defaultShutdownGrace, "on SIGTERM or SIGINT, how long (a `DURATION`; 0 for none) running turns have to finish before they are cancelled (not with --worker: its turns go back to the queue at once)")
	fs.IntVar(&f.streams, "max-streams", server.DefaultWatchers, fmt.Sprintf("how many event streams (`N`, 1 to %d) the server keeps open at once, of all clients; one more is refused (429)", maxStreams))
	fs.IntVar(&f.streamsPerClient, "max-streams-per-client", server.DefaultWatchersPerClient, fmt.Sprintf("how many event streams (`N`, 1 to %d) one client address may keep open at once (behind a proxy, every client is the proxy); one more is refused (429)", maxStreams))
	fs.StringVar(&f.logFormat, "log-format", "text", "how the line logged to stderr for each request and each turn is written: `text` (key=value) or json")
	if name := refusedFlag(args, notServeFlags); name != "" {
		return nil, usageError(stderr, "serve", fmt.Sprintf("--%s is run's and chat's: over the API each request names its conversation, and a turn on a conversation another writer advances is refused (409) rather than waited for", name)), true
	}
	pos, code, done := parseCommand("serve", serveUsage, fs, args, stdout, stderr)
	if done {
		return nil, code, true
	}
	set := explicit(fs)
	if err := f.agentFlags.check(set); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	if err := f.check(set); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	if len(pos) > 0 {
		return nil, usageError(stderr, "serve", fmt.Sprintf("takes no arguments, got %q", pos)), true
	}
	if err := f.perm.load(f.workspace, stderr); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	if f.token == "" {
		f.token = os.Getenv("MYELIN_TOKEN")
	}
	// off loopback without a token anyone who reaches the port drives
	// every tool; a token too weak, or CORS without one, would leave the
	// API open to any web page: the server would refuse every request, so
	// refuse here (the same check as mcp serve --http's)
	if err := (&httpguard.Guard{Token: f.token, CORSOrigins: f.cors}).CheckListen("--addr", f.addr); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	var err error
	if c.logger, err = serveLogger(f.logFormat, stderr); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	if c.bgLimits, err = f.background.limits(); err != nil {
		return nil, usageError(stderr, "serve", err.Error()), true
	}
	c.dsn = storeChoice(f.store)
	if f.worker {
		if !isPostgres(c.dsn) {
			return nil, usageError(stderr, "serve", "--worker needs the Postgres store: give --store postgres://user@host:port/database (or MYELIN_STORE)"), true
		}
		f.store = workerPool(c.dsn, f.workers)
	}
	return c, exitOK, false
}

// newAPI makes the API, before the agent: it is what MCP servers ask
// (elicitation and sampling, for the conversation whose call asks), whom
// the permission gate asks (an approval event, for the conversation whose
// turn calls) and where background scripts' wakes go (it runs the woken
// turns). It sets the toolset's flags to use it.
func (c *serveSetup) newAPI(stderr io.Writer) *server.Server {
	api := &server.Server{Token: c.token, CORSOrigins: c.cors, ElicitTimeout: c.elicitTimeout, ApprovalTimeout: c.approvalTimeout, Logger: c.logger,
		Watchers: c.streams, WatchersPerClient: c.streamsPerClient,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, "myelin serve: "+format+"\n", args...) }}
	c.tools.mcp.ui = newMCPUI(nil, stderr)
	c.tools.mcp.ui.elicitor, c.tools.mcp.ui.sampler = api, api
	c.perm.asker = api
	c.tools.background = &backgroundSetup{limits: c.bgLimits, wakes: api}
	return api
}

// serveSession gives the API the session's agent, workspace, background
// scripts and toolset, which it rebuilds for each turn (one at a time)
// with the MCP servers' new tools, if they changed.
func serveSession(api *server.Server, s *session) {
	api.Agent, api.Workspace, api.Background = s.agent, s.ws, s.tools.bg
	var toolsMu sync.Mutex // the toolset is rebuilt by one turn at a time
	api.Tools = func() (*tool.Registry, error) {
		toolsMu.Lock()
		defer toolsMu.Unlock()
		_, err := s.tools.refresh() // the MCP servers' new tools, if they changed
		return s.tools.reg, err
	}
}

// serve serves the API on ln until it fails, or is told to stop (a
// signal, or ctx), then stops as stopServing says.
func (c *serveSetup) serve(ctx context.Context, api *server.Server, ln net.Listener, wsDir string, stopWorkers func(), stderr io.Writer) error {
	hs := httpguard.Server(api)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "myelin serve: listening on http://%s (workspace %s)\n", ln.Addr(), wsDir)
	signals := interruptsOf(ctx) // SIGTERM and SIGINT (main.go)
	select {
	case err := <-served:
		return err
	case sig := <-signals:
		return stopServing(api, hs, stopWorkers, c.worker, c.grace, fmt.Sprint(sig), signals, stderr)
	case <-ctx.Done():
		return stopServing(api, hs, stopWorkers, c.worker, c.grace, "told to stop", signals, stderr)
	}
}

// serveLogger is the logger of serve's request and turn lines on stderr,
// in format text or json.
func serveLogger(format string, stderr io.Writer) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, nil)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// stopServing stops serve, told to by why (a signal's name): the API
// refuses new turns and its running turns have grace to finish, or until
// the next of signals, then are cancelled and store what they did; a
// worker's turns go back to the queue at once (stopWorkers stops taking
// jobs meanwhile). The HTTP server answers the while — a cancel, an
// elicitation's answer, an event stream — and stops once the turns have
// ended and their streams have said so.
func stopServing(api *server.Server, hs *http.Server, stopWorkers func(), worker bool, grace time.Duration, why string, signals <-chan os.Signal, stderr io.Writer) error {
	if worker {
		fmt.Fprintf(stderr, "myelin serve: %s: stopping; new turns are refused (503), running turns go back to the queue for another worker\n", why)
	} else {
		fmt.Fprintf(stderr, "myelin serve: %s: stopping; new turns are refused (503), running turns have %s to finish, then are cancelled (a second signal cancels them now)\n", why, grace)
	}
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case sig := <-signals:
			fmt.Fprintf(stderr, "myelin serve: %s again: cancelling the running turns now\n", sig)
			cancel()
		case <-gctx.Done():
		}
	}()
	workersStopped := make(chan struct{})
	go func() { // takes no more jobs, and waits for the turns handed back
		defer close(workersStopped)
		stopWorkers()
	}()
	if n := api.Shutdown(gctx); n > 0 {
		fmt.Fprintf(stderr, "myelin serve: cancelled %d running turn(s); each stored what it did\n", n)
	}
	<-workersStopped
	sctx, cancelHTTP := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelHTTP()
	return hs.Shutdown(sctx)
}
