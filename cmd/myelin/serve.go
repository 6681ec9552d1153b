package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/history"
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
      It stops on an interrupt, letting running turns store what they did.
      It logs one line to stderr per request and per turn ended
      (--log-format text or json), never a token, prompt or answer.
      With --worker on a Postgres store (--store postgres://...), several
      serve processes on several hosts share the turns: each turn is queued
      with its prompt and run by one of them, and its events reach a client
      of any (docs/scale.md).
      What MCP servers ask during a call (an elicitation, a sampling
      request) is an event of the conversation whose call it is, which its
      clients answer over the API; background scripts' wakes are events
      too, each followed by its turn (docs/serve.md).
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
	// logFormat is how the request and turn lines are written to stderr:
	// text or json (log/slog's handlers).
	logFormat string
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f serveFlags
	fs := f.agentFlags.set("serve")
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
	fs.IntVar(&f.workers, "workers", defaultWorkers, "with --worker, how many turns this process runs at once (`N`; 0 runs none: it only queues turns and serves events)")
	fs.DurationVar(&f.elicitTimeout, "elicitation-timeout", server.DefaultElicitTimeout, "how long (a `DURATION`) an MCP server's question (an elicitation event) waits for a client's answer before it is declined")
	fs.DurationVar(&f.lease, "lease", history.DefaultLease, "how long a turn's claim on its conversation lasts unrenewed (`DURATION`): a worker that died is taken over after it, or at once on its own host")
	fs.StringVar(&f.logFormat, "log-format", "text", "how the line logged to stderr for each request and each turn is written: `text` (key=value) or json")
	pos, code, done := parseCommand("serve", serveUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	set := explicit(fs)
	if err := f.check(set); err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	if len(pos) > 0 {
		return usageError(stderr, "serve", fmt.Sprintf("takes no arguments, got %q", pos))
	}
	if set["conversation"] || set["continue"] {
		return usageError(stderr, "serve", "--conversation and --continue pick the conversation of run and chat; over the API each request names its conversation")
	}
	if f.token == "" {
		f.token = os.Getenv("MYELIN_TOKEN")
	}
	if !server.Loopback(f.addr) && f.token == "" {
		return usageError(stderr, "serve", fmt.Sprintf("--addr %s is not a loopback address: give a token (--token or MYELIN_TOKEN) that every request must send, or listen on 127.0.0.1", f.addr))
	}
	// a token too weak, or CORS without one, would leave the API open to
	// any web page: the server would refuse every request, so refuse here
	if err := (&server.Server{Token: f.token, CORSOrigins: f.cors}).Check(); err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	if f.workers < 0 || f.lease <= 0 {
		return usageError(stderr, "serve", fmt.Sprintf("--workers %d, --lease %s: give a number ≥ 0 and a duration > 0", f.workers, f.lease))
	}
	if f.elicitTimeout <= 0 {
		return usageError(stderr, "serve", fmt.Sprintf("--elicitation-timeout %s: give a duration > 0 (default %s)", f.elicitTimeout, server.DefaultElicitTimeout))
	}
	logger, err := serveLogger(f.logFormat, stderr)
	if err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	bgLimits, err := f.background.limits()
	if err != nil {
		return usageError(stderr, "serve", err.Error())
	}
	if (set["workers"] || set["lease"]) && !f.worker {
		return usageError(stderr, "serve", "--workers and --lease go with --worker")
	}
	dsn := storeChoice(f.store)
	if f.worker {
		if !isPostgres(dsn) {
			return usageError(stderr, "serve", "--worker needs the Postgres store: give --store postgres://user@host:port/database (or MYELIN_STORE)")
		}
		f.store = workerPool(dsn, f.workers)
	}
	// The API is made first: it is what MCP servers ask (elicitation and
	// sampling, for the conversation whose call asks) and where background
	// scripts' wakes go (it runs the woken turns).
	api := &server.Server{Token: f.token, CORSOrigins: f.cors, ElicitTimeout: f.elicitTimeout, Logger: logger,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, "myelin serve: "+format+"\n", args...) }}
	f.tools.mcp.ui = newMCPUI(nil, stderr)
	f.tools.mcp.ui.elicitor, f.tools.mcp.ui.sampler = api, api
	f.tools.background = &backgroundSetup{limits: bgLimits, wakes: api}
	s, _, err := openAgent(ctx, f.agentFlags, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	defer s.close()
	s.agent.KeepRequests = true // the API serves each request as it was sent
	s.agent.Lease = f.lease
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	api.Agent, api.Workspace, api.Background = s.agent, s.ws, s.tools.bg
	var toolsMu sync.Mutex // the toolset is rebuilt by one turn at a time
	api.Tools = func() (*tool.Registry, error) {
		toolsMu.Lock()
		defer toolsMu.Unlock()
		_, err := s.tools.refresh() // the MCP servers' new tools, if they changed
		return s.tools.reg, err
	}
	stopWorkers := func() {}
	if f.worker {
		stop, err := startWorkers(ctx, api, s.store, dsn, f.workers, f.lease, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "myelin serve: %v\n", err)
			return exitError
		}
		stopWorkers = sync.OnceFunc(stop)
		defer stopWorkers() // before the store closes
	}
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "myelin serve: listening on http://%s (workspace %s)\n", ln.Addr(), s.ws.Dir())
	select {
	case err = <-served:
	case <-ctx.Done():
		fmt.Fprintln(stderr, "myelin serve: stopping; running turns store what they did")
		stopWorkers() // the queued turns this process runs store what they did
		api.Close()   // turns first: their event streams end with them
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "myelin serve: %v\n", err)
		return exitError
	}
	return exitOK
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
