package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// syncBuffer is a buffer a logger writes from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines are the log's JSON lines, decoded.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestTheServerLogsOneLinePerRequestAndPerTurnWithoutTokenOrBodies(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "the secret answer"})
	var logged syncBuffer
	f.srv.Logger = slog.New(slog.NewJSONHandler(&logged, nil))
	f.srv.Token, f.token = goodToken, goodToken
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "the secret prompt")
	w.until(t, EventTurnFinished)
	if status, _ := f.do("GET", "/v1/conversations/nowhere", ""); status != 404 {
		t.Fatalf("GET of an unknown conversation: %d", status)
	}

	var requests, turns []map[string]any
	for _, l := range logged.lines(t) {
		switch l["msg"] {
		case "request":
			requests = append(requests, l)
		case "turn":
			turns = append(turns, l)
		}
	}
	byRoute := map[string]map[string]any{}
	for _, r := range requests {
		byRoute[r["method"].(string)+" "+r["path"].(string)] = r
	}
	started := byRoute["POST /v1/conversations/"+id+"/turns"]
	if started == nil || started["status"] != float64(202) || started["bytes"].(float64) <= 0 || started["duration"] == nil {
		t.Errorf("the turn's POST logged as %v; want status 202, its bytes and duration", started)
	}
	if nf := byRoute["GET /v1/conversations/nowhere"]; nf == nil || nf["status"] != float64(404) {
		t.Errorf("the 404 logged as %v", nf)
	}
	if len(turns) != 1 {
		t.Fatalf("%d turn lines; want 1: %v", len(turns), turns)
	}
	turn := turns[0]
	if turn["conversation"] != id || turn["reason"] != "end_turn" || turn["rounds"] == nil || turn["output_tokens"] == nil || turn["duration"] == nil || turn["turn"] == "" {
		t.Errorf("the turn logged as %v; want its conversation, turn, reason end_turn, rounds, tokens and duration", turn)
	}
	all := logged.b.String()
	for _, secret := range []string{goodToken, "the secret prompt", "the secret answer"} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
}

// A handler that panics before it answers is no 200: net/http closes the
// connection, so its line says 500 and aborted, at level error, and the
// panic goes on to net/http.
func TestARequestWhoseHandlerPanickedIsLoggedAsA500Aborted(t *testing.T) {
	var log syncBuffer
	s := &Server{Logger: slog.New(slog.NewJSONHandler(&log, nil))}
	r := httptest.NewRequest(http.MethodGet, "/v1/conversations", nil)
	var passedOn any
	func() {
		defer func() { passedOn = recover() }()
		_, _, done := s.logged(httptest.NewRecorder(), r)
		defer done()
		panic("a handler's bug")
	}()
	if passedOn != "a handler's bug" {
		t.Errorf("the panic passed on is %v; want the handler's, for net/http", passedOn)
	}
	lines := log.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %v", len(lines), lines)
	}
	if l := lines[0]; l["status"] != float64(500) || l["aborted"] != true || l["level"] != "ERROR" {
		t.Errorf("the request's line = %v; want status 500, aborted true, level ERROR", l)
	}
}
