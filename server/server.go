// Package server is myelin's HTTP API (contract §13): conversations, turns
// started and cancelled over HTTP, their events streamed live as
// server-sent events that resume without loss, the stored records served
// as stored, tools called directly and spill files paged.
//
// It is the fifth consumer of the one conversion (contract §1): every text
// it serves — a tool's result, a stored message, a page of a spill file —
// is the text package result made, never converted again here. It owns
// no conversation state that matters after a restart: the store holds
// that; the server keeps only the events of the conversations it ran
// since it started, for watchers that resume. It must not let a client
// hold a turn: events are logged, and each watcher reads the log at its
// own pace.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/httpguard"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// DefaultMaxBody is the largest request body the server reads, in bytes.
const DefaultMaxBody = httpguard.DefaultMaxBody

// Server is the HTTP API over one agent: its provider, store, tools and
// workspace. Agent and Workspace must be set; the zero values of the other
// fields work. A Server is an http.Handler.
type Server struct {
	// Agent runs the turns; its Store holds the conversations and its
	// Tools are the tools the API lists and calls.
	Agent *agent.Agent
	// Workspace is where spill files are read from.
	Workspace *workspace.Workspace
	// Token, when set, must come with every request as
	// "Authorization: Bearer TOKEN" (the scheme in any case); it is
	// compared in constant time. It must be at least MinTokenLength
	// characters of visible ASCII (CheckToken).
	Token string
	// CORSOrigins are the origins (scheme://host[:port], exactly as a
	// browser sends them in Origin) whose pages may call the API; "*"
	// allows any. Empty, the default, sends no CORS headers: a page of
	// another origin cannot read an answer. They need a Token, which is
	// checked all the same: a page an origin serves is only as safe as
	// that origin (Check).
	CORSOrigins []string
	// MaxBody bounds a request's body; 0 means DefaultMaxBody.
	MaxBody int64
	// EventsKept is how many events of each conversation are kept for
	// watchers that resume; 0 means DefaultEventsKept. It sizes the
	// server's own event log (when Events is nil).
	EventsKept int
	// EventBytes bounds the memory of the events the server keeps of all
	// its conversations (their data, and a few words each); 0 means
	// DefaultEventBytes. Past it, the events of the conversations idle
	// longest are dropped, and their watchers told (events.lost). It
	// sizes the server's own event log (when Events is nil).
	EventBytes int64
	// EventsIdle is how long the server keeps a conversation's events
	// after its last, and what it holds of a conversation nothing runs
	// on here (no turn, no wake waiting) after it was last used: the
	// tool set its last turn offered, for the notice that the tools
	// changed, and that turn's end, for a cancel of it; 0 means
	// DefaultEventsIdle. It sizes the server's own event log (when
	// Events is nil).
	EventsIdle time.Duration
	// StreamWriteTimeout is how long one write of an event stream may
	// wait for its client before the stream is ended (the client resumes
	// with Last-Event-ID); 0 means DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// WatchersPerConversation, WatchersPerClient and Watchers bound the
	// event streams open at once: of one conversation, from one client
	// address, and in all; 0 means DefaultWatchersPerConversation,
	// DefaultWatchersPerClient, DefaultWatchers. A stream past one is
	// refused with 429.
	WatchersPerConversation, WatchersPerClient, Watchers int
	// Events, when set, is where the conversations' events are kept: a
	// log shared by several server processes, so that a watcher of any
	// of them follows a turn run by another. Nil, the server keeps them
	// in memory since it started.
	Events EventLog
	// Queue, when set, is where turns go instead of running in this
	// process: a turn started is stored with its job in one transaction,
	// and one of the workers sharing the queue runs it (RunQueued), here
	// or on another host. Nil, the server runs its turns itself.
	Queue TurnQueue
	// Tools, when set, gives the tools a turn offers, asked as each turn
	// starts (never within one): the MCP servers' new set after a
	// tools/list_changed. The API lists and calls them too. It is called
	// from several goroutines at once, and must not block long. Nil, the
	// Agent's Tools are offered.
	Tools func() (*tool.Registry, error)
	// ElicitTimeout is how long an MCP server's elicitation waits for a
	// client's answer before it is declined; 0 means
	// DefaultElicitTimeout.
	ElicitTimeout time.Duration
	// ApprovalTimeout is how long a tool call's approval waits for a
	// client's decision before the call is denied (Ask); 0 means
	// DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Background, when set, is the Manager of the background scripts the
	// turns start; its Waker must be this Server (Wake). Each turn tells
	// its conversation once of the scripts a restart took away.
	Background *background.Manager
	// Log, when set, gets one line for each failure the server cannot
	// report to a client (a turn's store error after its client left).
	Log func(format string, args ...any)
	// Logger, when set, gets one line per HTTP request and one per turn
	// ended (logging.go), never a token or a body; nil logs neither.
	Logger *slog.Logger

	once  sync.Once
	mux   *http.ServeMux
	log   EventLog // Events, or the server's own
	mu    sync.Mutex
	convs map[string]*conversation
	// forgetting is the next sweep of convs' idle entries (forget.go),
	// nil when none is due
	forgetting *time.Timer
	base       context.Context // turns run under it; Close cancels it
	stop       context.CancelCauseFunc
	ended      chan struct{}  // closed once Shutdown's turns have ended: the streams end
	turns      sync.WaitGroup // added to under mu, while not closed
	closed     bool           // Shutdown or Close was called: no turn starts
	asks       asks           // the elicitations and approvals waiting for a client, and those ended
	// watching counts the event streams open
	watching watchers
	// beats is the streams' one heartbeat
	beats beats
	// handing are the queued turns running here (shutdown.go)
	handing handing
}

// conversation is what the server holds of one conversation while it
// runs: its running turn. An entry is dropped once idle (forget.go).
type conversation struct {
	mu   sync.Mutex
	turn *running // nil when no turn of this server runs it
	// used is when it was last taken (lockedConv); gone, that it was
	// dropped from Server.convs, and is to be taken again.
	used time.Time
	gone bool
	// queued counts the queued turns of it a worker of this server runs
	// (RunQueued), which set no turn here
	queued int
	// tools are the tools its last turn on this server offered.
	tools *tool.Registry
	// wakes are background scripts' wakes waiting for its running turn
	// to end, oldest first.
	wakes []background.Wake
	// wakesDue is when the first of wakes may be tried again after its
	// turn was refused (another writer held the conversation): no turn
	// ending here starts it before then, the retry's timer does.
	wakesDue time.Time
}

func (s *Server) init() {
	s.once.Do(func() {
		s.convs = map[string]*conversation{}
		s.log = s.Events
		if s.log == nil {
			s.log = newMemoryEvents(s.EventsKept, s.EventBytes, s.EventsIdle)
		}
		s.base, s.stop = context.WithCancelCause(context.Background())
		s.ended = make(chan struct{})
		m := http.NewServeMux()
		for _, rt := range s.routes() {
			m.HandleFunc(rt.method+" "+rt.path, rt.handle)
		}
		m.HandleFunc("GET /openapi.json", serveOpenAPI)
		m.Handle("GET /{$}", inspector())
		m.Handle("GET /inspector/", inspector())
		m.HandleFunc("/v1/", s.noEndpoint)
		m.HandleFunc("/", s.notFound)
		s.mux = m
	})
}

// route is one endpoint of the API; /openapi.json describes each (a test
// holds the two to each other).
type route struct {
	method, path string
	handle       http.HandlerFunc
}

func (s *Server) routes() []route {
	return []route{
		{"GET", "/v1/conversations", s.listConversations},
		{"POST", "/v1/conversations", s.createConversation},
		{"GET", "/v1/conversations/{id}", s.getConversation},
		{"DELETE", "/v1/conversations/{id}", s.deleteConversation},
		{"GET", "/v1/conversations/{id}/children", s.children},
		{"POST", "/v1/conversations/{id}/fork", s.fork},
		{"POST", "/v1/conversations/{id}/rewind", s.rewindConversation},
		{"POST", "/v1/conversations/{id}/undo", s.undo},
		{"POST", "/v1/conversations/{id}/redo", s.redo},
		{"GET", "/v1/conversations/{id}/branches", s.branches},
		{"POST", "/v1/conversations/{id}/switch", s.switchBranch},
		{"GET", "/v1/conversations/{id}/messages", s.messages},
		{"GET", "/v1/conversations/{id}/events", s.events},
		{"POST", "/v1/conversations/{id}/turns", s.startTurn},
		{"POST", "/v1/conversations/{id}/turns/{tid}/cancel", s.cancelTurn},
		{"GET", "/v1/conversations/{id}/requests", s.listRequests},
		{"GET", "/v1/conversations/{id}/requests/{n}", s.getRequest},
		{"GET", "/v1/conversations/{id}/requests/{n}/body", s.requestBody},
		{"GET", "/v1/conversations/{id}/requests/{n}/diff", s.requestDiff},
		{"GET", "/v1/conversations/{id}/elicitations", s.listElicitations},
		{"POST", "/v1/conversations/{id}/elicitations/{eid}", s.answerElicitation},
		{"GET", "/v1/conversations/{id}/approvals", s.listApprovals},
		{"POST", "/v1/conversations/{id}/approvals/{approval_id}", s.answerApproval},
		{"GET", "/v1/tools", s.listTools},
		{"POST", "/v1/tools/{name}/call", s.callTool},
		{"GET", "/v1/spills/{path...}", s.spill},
	}
}

// noEndpoint answers a request no endpoint takes: 405 naming the methods
// the path takes, else 404.
func (s *Server) noEndpoint(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/v1/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not a method of %s; it takes %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s; GET /openapi.json lists them", r.Method, r.URL.Path))
}

// ServeHTTP checks the host, the origin and the token, bounds the body and
// routes the request (internal/httpguard holds the rules).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	w, r, done := s.logged(w, r)
	defer done()
	s.guard().Wrap(s.mux).ServeHTTP(w, r)
}

// guard is the Server's settings as the rules its requests are served
// under. Made for each request, it sees the fields as they are.
func (s *Server) guard() *httpguard.Guard {
	limit := s.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	return &httpguard.Guard{
		Token:       s.Token,
		CORSOrigins: s.CORSOrigins,
		CORSMethods: []string{"GET", "POST", "DELETE"},
		CORSHeaders: []string{"Authorization", "Content-Type", "Last-Event-ID"},
		CORSExpose:  []string{"Location"},
		OriginsFlag: "--cors-origin",
		MaxBody:     limit,
		Open:        isInspectorFile,
		Refuse:      writeError,
	}
}

// MinTokenLength is the fewest characters a Server's Token may have.
const MinTokenLength = httpguard.MinTokenLength

// CheckToken says what is wrong with a token, nil when nothing is: it
// must be at least MinTokenLength characters, each visible ASCII (no
// space, tab or other control character, nothing outside ASCII, which
// headers do not carry reliably). The error never holds the token.
func CheckToken(tok string) error { return httpguard.CheckToken(tok) }

// Check says what in the Server's settings would leave its API open, nil
// when nothing does: a Token CheckToken refuses, or CORSOrigins without a
// Token (a page of an allowed origin, any page with "*", would drive the
// whole API, its tools included). While it fails, ServeHTTP answers every
// request with its error (500); myelin serve checks it before listening.
func (s *Server) Check() error { return s.guard().Check() }

// errClosing is the cause the turns' context carries once Close is called.
var errClosing = errors.New("the server is closing")

// Close stops the server at once: Shutdown with no time for the running
// turns, which are cancelled and store what they did; then it ends the
// event streams, whose watchers have got each turn's turn.finished
// (events are not kept across a restart).
func (s *Server) Close() error {
	now, cancel := context.WithCancel(context.Background())
	cancel()
	s.Shutdown(now)
	return nil
}

// addTurn counts a turn about to start in s.turns, false when the server
// is closing (a WaitGroup must not be added to while Close waits on it).
func (s *Server) addTurn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.turns.Add(1)
	return true
}

// found reports whether conversation id is in the store, writing the
// error when it is not (or the store failed).
func (s *Server) found(w http.ResponseWriter, r *http.Request, id string) (history.Conversation, bool) {
	c, err := s.Agent.Store.Get(r.Context(), id)
	if errors.Is(err, history.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no conversation %q", id))
		return c, false
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return c, false
	}
	return c, true
}

// apiError is the body of every error answer.
type apiError struct {
	Error struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers with status and a JSON body whose message says what
// was wrong.
func writeError(w http.ResponseWriter, status int, msg string) {
	var e apiError
	e.Error.Status, e.Error.Message = status, msg
	writeJSON(w, status, e)
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := result.JSON(v) // stored records and texts as themselves: no HTML escaping
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"status":500,"message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// readJSON decodes the request's body into v, which must be one JSON
// object with no unknown field; an empty body leaves v as it is. The
// error says what was wrong with it.
func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Errorf("the request body is over %d bytes", tooBig.Limit)
	}
	if err != nil {
		return fmt.Errorf("the request body is not the JSON this endpoint takes: %w", err)
	}
	if dec.More() {
		return errors.New("the request body holds more than one JSON value")
	}
	return nil
}

// Loopback reports whether addr (host:port) listens only on the loopback
// interface, where a server may run without a token.
func Loopback(addr string) bool { return httpguard.Loopback(addr) }
