package mcp

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/mcp/mcptest"
)

// askServer is mcptest.Asker on loopback HTTP: its tools ask the client
// things during their calls: elicit (a form with defaults), visit (a URL),
// sample (a completion), work (progress), say (a log message) and grow
// (adds a tool, and so tools/list_changed).
func askServer(t *testing.T) Server {
	t.Helper()
	hs := httptest.NewServer(mcptest.Asker())
	t.Cleanup(hs.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
	return Server{Name: "asker", Type: "http", URL: hs.URL}
}

// elicitor answers with what answer gives, and keeps what it was asked.
type elicitor struct {
	mu     sync.Mutex
	asked  []*Elicitation
	answer func(*Elicitation) Answer
}

func (e *elicitor) Elicit(_ context.Context, el *Elicitation) (Answer, error) {
	e.mu.Lock()
	e.asked = append(e.asked, el)
	e.mu.Unlock()
	return e.answer(el), nil
}

// notices keeps what Notify was told.
type notices struct {
	mu    sync.Mutex
	lines []string
}

func (n *notices) add(s string) { n.mu.Lock(); n.lines = append(n.lines, s); n.mu.Unlock() }
func (n *notices) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.lines, "\n")
}

func TestAFormElicitationReachesTheElicitorWithItsFieldsAndDefaults(t *testing.T) {
	el := &elicitor{answer: func(e *Elicitation) Answer {
		content := map[string]any{"age": 41}
		for _, f := range e.Fields {
			if f.Default != nil {
				content[f.Name] = f.Default
			}
		}
		return Answer{Action: "accept", Content: content}
	}}
	h := start(t, []Server{askServer(t)}, Options{Elicitor: el})
	out := h.call("asker--elicit", `{}`)
	if out.IsError || out.Text != `accept {"age":41,"color":"blue","name":"Ann","verified":true}` {
		t.Fatalf("got %q (error %v)", out.Text, out.IsError)
	}
	if len(el.asked) != 1 {
		t.Fatalf("asked %d times", len(el.asked))
	}
	e := el.asked[0]
	var names []string
	for _, f := range e.Fields {
		names = append(names, f.Name)
	}
	if e.Server != "asker" || e.Mode != "form" || e.Message != "Who are you?" || !slices.Equal(names, []string{"age", "color", "name", "verified"}) {
		t.Errorf("asked %+v (fields %v): want the required field first, then by name", e, names)
	}
	if f := e.Fields[1]; !slices.Equal(f.Enum, []string{"red", "blue"}) || f.Default != "blue" || f.Required {
		t.Errorf("color: %+v", f)
	}
}

func TestAURLElicitationIsAskedWithItsURLAndSendsNoContent(t *testing.T) {
	el := &elicitor{answer: func(*Elicitation) Answer { return Answer{Action: "accept", Content: map[string]any{"x": 1}} }}
	h := start(t, []Server{askServer(t)}, Options{Elicitor: el})
	if out := h.call("asker--visit", `{}`); out.Text != "accept" {
		t.Fatalf("got %q", out.Text)
	}
	if e := el.asked[0]; e.Mode != "url" || e.URL != "https://example.test/signin" || e.ID != "e1" {
		t.Errorf("asked %+v", e)
	}
}

func TestWithNoOneToAskAnElicitationIsDeclinedAndTheUserToldWhy(t *testing.T) {
	n := &notices{}
	h := start(t, []Server{askServer(t)}, Options{Notify: n.add})
	if out := h.call("asker--elicit", `{}`); out.Text != "decline null" {
		t.Fatalf("got %q", out.Text)
	}
	if !strings.Contains(n.all(), `MCP server asker asked for input ("Who are you?"); declined: no one to ask`) {
		t.Errorf("notices: %q", n.all())
	}
}

// sampler answers every sample with its text, costing tokens.
type sampler struct {
	mu     sync.Mutex
	got    []*Sample
	tokens int64
}

func (s *sampler) Sample(_ context.Context, smp *Sample) (Completion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, smp)
	return Completion{Text: "hi", Model: "m1", StopReason: "endTurn", Tokens: s.tokens}, nil
}

func TestSamplingIsOffUnlessTheConfigGivesTheServerABudget(t *testing.T) {
	smp := &sampler{tokens: 30}
	h := start(t, []Server{askServer(t)}, Options{Sampler: smp})
	if out := h.call("asker--sample", `{}`); !out.IsError {
		t.Errorf("without a budget: got %q, want an error", out.Text)
	}
	if len(smp.got) != 0 {
		t.Errorf("the sampler was asked %d times", len(smp.got))
	}
}

func TestSamplingGoesToTheSamplerWithinTheServersBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget SamplingBudget
		tokens int64
		want   []string // each call's text, in order
	}{
		{"two requests allowed", SamplingBudget{Requests: 2, Tokens: 1000}, 30, []string{"m1: hi", "m1: hi", "sampling budget of 2 requests is spent"}},
		{"tokens run out", SamplingBudget{Requests: 10, Tokens: 200}, 120, []string{"m1: hi", "a request of up to 100 tokens would go over its sampling budget (120 of 200 tokens used)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, n := askServer(t), &notices{}
			s.Sampling = &tc.budget
			smp := &sampler{tokens: tc.tokens}
			h := start(t, []Server{s}, Options{Sampler: smp, Notify: n.add})
			for i, want := range tc.want {
				if out := h.call("asker--sample", `{}`); !strings.Contains(out.Text, want) {
					t.Errorf("call %d: got %q, want %q in it", i+1, out.Text, want)
				}
			}
			if g := smp.got[0]; g.Server != "asker" || g.System != "be brief" || g.MaxTokens != 100 || len(g.Messages) != 1 || g.Messages[0] != (SampleMessage{Role: "user", Text: "say hi"}) {
				t.Errorf("sample %+v", g)
			}
			if !strings.Contains(n.all(), "MCP server asker asks the model to complete (up to 100 tokens): say hi") {
				t.Errorf("notices: %q", n.all())
			}
		})
	}
}

func TestProgressNotificationsReachTheCallersProgress(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	h := start(t, []Server{askServer(t)}, Options{Progress: func(p Progress) { mu.Lock(); got = append(got, p); mu.Unlock() }})
	if out := h.call("asker--work", `{}`); out.Text != "worked" {
		t.Fatalf("got %q", out.Text)
	}
	// The SDK hands notifications on apart from the reply, which can
	// overtake them: wait for the three (the test's deadline bounds it).
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// Notifications and the reply travel on one stream, in order.
	want := []Progress{{"asker", "asker--work", 1, 3, "step 1"}, {"asker", "asker--work", 2, 3, "step 2"}, {"asker", "asker--work", 3, 3, "step 3"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestWithoutAProgressCallbackNoProgressIsAskedFor(t *testing.T) {
	h := start(t, []Server{askServer(t)}, Options{})
	if out := h.call("asker--work", `{}`); out.Text != "no progress token" {
		t.Fatalf("got %q", out.Text)
	}
}

func TestLogMessagesGoToTheServersLogFile(t *testing.T) {
	h := start(t, []Server{askServer(t)}, Options{})
	if out := h.call("asker--say", `{}`); out.Text != "said" {
		t.Fatalf("got %q", out.Text)
	}
	h.set.Close() // the log is written before the session ends
	if log := string(h.file(".myelin/logs/mcp-asker.log")); !strings.Contains(log, "[warning disk] almost full\n") {
		t.Errorf("log: %q", log)
	}
}

func TestAChangedToolListIsOfferedFromTheNextToolsOn(t *testing.T) {
	h := start(t, []Server{askServer(t)}, Options{})
	before := h.set.Version()
	names := func() []string {
		var out []string
		for _, tl := range h.set.Tools() {
			out = append(out, tl.Name)
		}
		return out
	}
	if slices.Contains(names(), "asker--grown") {
		t.Fatal("grown is offered before it was added")
	}
	if out := h.call("asker--grow", `{}`); out.Text != "grew" {
		t.Fatalf("got %q", out.Text)
	}
	// The notification comes on the standalone stream, and the new list
	// is fetched after it: wait for the Set to say so (the test's own
	// deadline bounds the wait).
	for h.set.Version() == before {
		time.Sleep(5 * time.Millisecond)
	}
	if !slices.Contains(names(), "asker--grown") {
		t.Errorf("after list_changed: %v", names())
	}
	if st := h.set.Status()[0]; !slices.Contains(st.Tools, "asker--grown") {
		t.Errorf("status tools %v", st.Tools)
	}
}
