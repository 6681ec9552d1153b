package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Only run and chat keep the collector put off past main's start
// (internal/startgc): every other command puts it back first thing.
func TestOnlyRunAndChatKeepTheCollectorPutOff(t *testing.T) {
	for args, want := range map[string]bool{"run": true, "chat": true, "serve": false, "version": false, "history": false, "tool": false, "mcp": false, "": false} {
		var list []string
		if args != "" {
			list = []string{args, "--workspace", "."}
		}
		if got := startsATurn(list); got != want {
			t.Errorf("startsATurn(%q) = %v, want %v", list, got, want)
		}
	}
}

// Only run and chat have their start's arrays in huge pages, and only
// until their first request is sent (startDone).
func TestOnlyRunAndChatAskForHugePagesUntilTheirStartIsDone(t *testing.T) {
	if _, err := hugepage.Advised([]byte(nil)); errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err) // a kernel not on madvise: Allow allows nothing
	}
	defer hugepage.Stop()
	for _, name := range []string{"run", "chat", "serve", "version", "history", "tool", "mcp", ""} {
		var args []string
		if name != "" {
			args = []string{name, "--workspace", "."}
		}
		hugepage.Stop()
		begin(args)
		if want := name == "run" || name == "chat"; hugepage.Allowed() != want {
			t.Errorf("after begin(%q) huge pages asked for: %v, want %v", args, hugepage.Allowed(), want)
		}
		startDone()
		if hugepage.Allowed() {
			t.Errorf("begin(%q): huge pages still asked for after startDone", args)
		}
	}
}

// A resumed run keeps the collector put off until its first request is
// sent — the request reaches the provider before the collector is put
// back — and puts it back before it ends, whatever the turn does after.
func TestARunPutsTheCollectorBackOnceItsAnswerBegins(t *testing.T) {
	var done atomic.Int32
	defer func(f func()) { startDone = f }(startDone)
	startDone = func() { done.Add(1) }

	dir := workspaceWith(t, nil)
	id := storedRounds(t, filepath.Join(dir, ".myelin", "history.db"), 200)
	srv := providertest.NewAnthropic(t,
		providertest.Step{Text: "Reading.", ToolCalls: []providertest.ToolCall{{ID: "toolu_x", Name: "workspace--list", Input: `{}`}}},
		providertest.Step{Text: "done"})
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var atRequest []int32 // Done's calls when each request arrived
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		atRequest = append(atRequest, done.Load())
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", front.URL)
	t.Setenv("OPENAI_API_KEY", "")

	if _, errOut, code := cli(t, "run", "--workspace", dir, "--conversation", id, "go on"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(atRequest) != 2 || atRequest[0] != 0 {
		t.Fatalf("the collector was put back %v times when each request arrived; want 0 at the first of two", atRequest)
	}
	if atRequest[1] == 0 || done.Load() == 0 {
		t.Fatalf("the collector was not put back after the first answer (%v at the requests, %d in all)", atRequest, done.Load())
	}
}

// answering tells an answer's events from those before its request.
func TestAnsweringIsAnAnswersEvents(t *testing.T) {
	for _, c := range []struct {
		e    agent.Event
		want bool
	}{
		{agent.Event{Kind: agent.Started}, false},
		{agent.Event{Kind: agent.Stored, Message: &history.Message{Role: history.User}}, false},
		{agent.Event{Kind: agent.Notice}, false},
		{agent.Event{Kind: agent.ContextEdit}, false},
		{agent.Event{Kind: agent.Waiting}, false},
		{agent.Event{Kind: agent.TextDelta}, true},
		{agent.Event{Kind: agent.Thinking}, true},
		{agent.Event{Kind: agent.Usage}, true},
		{agent.Event{Kind: agent.ToolCall}, true},
		{agent.Event{Kind: agent.Stored, Message: &history.Message{Role: history.Assistant}}, true},
	} {
		if got := answering(c.e); got != c.want {
			t.Errorf("answering(%s) = %v, want %v", c.e.Kind, got, c.want)
		}
	}
}
