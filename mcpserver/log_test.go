package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// logs is a host that keeps the log messages it gets.
type logs struct {
	mu  sync.Mutex
	got []sdk.LoggingMessageParams
}

func (l *logs) options() *sdk.ClientOptions {
	return &sdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, *req.Params)
	}}
}

// take returns the messages got so far and forgets them.
func (l *logs) take() []sdk.LoggingMessageParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// find is the first message of level whose text holds all of words.
func find(msgs []sdk.LoggingMessageParams, level sdk.LoggingLevel, words ...string) *sdk.LoggingMessageParams {
	for i, m := range msgs {
		text, _ := m.Data.(string)
		if m.Level != level || m.Logger != Logger {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			return &msgs[i]
		}
	}
	return nil
}

// A host that set a log level gets notifications/message: each call's
// start and end at debug, a spilled result at info naming the spill
// file, a denied call at warning with why; at level warning only the
// denial; and without a level, nothing. (A notification may come after
// the result of its call, but they come in order: the test waits for the
// last one it wants, and those before it have come.)
func TestAHostGetsTheLogOfItsCallsAtTheLevelItSet(t *testing.T) {
	ws := openWorkspace(t)
	big := strings.Repeat("a line of output\n", 500)
	rules := []permission.Rule{mustRule(t, "test--big", permission.Allow), mustRule(t, "test--no", permission.Deny)}
	s := New(Config{
		Tools: registry(t, rawTool("test--big", result.Result{Data: big}), rawTool("test--no", result.Result{Data: "ran"})),
		Env:   result.Env{Store: ws, Limits: result.Limits{Agent: 1000}},
		Gate:  &approval.Gate{Policy: &permission.Policy{User: rules}},
	})
	l := &logs{}
	cs := connectAt(t, s, l.options(), hostVersion)
	ctx := context.Background()
	setLevel := func(level sdk.LoggingLevel) {
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
	}
	// until the level is set, nothing; then the denial at warning is the
	// first message
	call(t, cs, "test--big", nil)
	call(t, cs, "test--no", nil)
	setLevel("warning")
	call(t, cs, "test--no", nil)
	msgs := l.until(t, "the denial at warning", func(m []sdk.LoggingMessageParams) bool { return find(m, "warning", "test--no") != nil })
	if len(msgs) != 1 || find(msgs, "warning", "test--no", "denied", "test--no (--deny)") == nil {
		t.Errorf("the host got %v, want only the denial at warning, with its rule (none before the level was set)", msgs)
	}
	setLevel("debug")
	res := call(t, cs, "test--big", nil)
	msgs = l.until(t, "the end of test--big at debug", func(m []sdk.LoggingMessageParams) bool { return find(m, "debug", "of test--big ended in") != nil })
	if find(msgs, "debug", "of test--big started") == nil {
		t.Errorf("at debug the host got %v, want the call's start", msgs)
	}
	spill := find(msgs, "info", "test--big", ".myelin/tool-results/", "8500 characters")
	if spill == nil {
		t.Fatalf("at debug the host got %v, want the spill at info", msgs)
	}
	if text := spill.Data.(string); !strings.Contains(textOf(res), text[strings.Index(text, ".myelin/"):strings.Index(text, ".txt")+4]) {
		t.Errorf("the spill message %q names another file than the result %q", text, textOf(res))
	}
	setLevel("warning")
	call(t, cs, "test--big", nil)
	call(t, cs, "test--no", nil)
	msgs = l.until(t, "the denial at warning", func(m []sdk.LoggingMessageParams) bool { return find(m, "warning", "test--no") != nil })
	if len(msgs) != 1 {
		t.Errorf("at warning the host got %s, want the denial only", fmt.Sprint(msgs))
	}
}

// until waits until the messages got so far satisfy done, and returns
// them (forgetting them), or fails the test naming what did not come.
func (l *logs) until(t *testing.T, what string, done func([]sdk.LoggingMessageParams) bool) []sdk.LoggingMessageParams {
	t.Helper()
	waitFor(t, what, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return done(l.got)
	})
	return l.take()
}

// A host of protocol 2026-07-28 gives the level with each request
// (_meta): a call at info gets its spill, not its start and end.
func TestAHostGivesTheLogLevelWithEachCallAt20260728(t *testing.T) {
	ws := openWorkspace(t)
	s := New(Config{
		Tools: registry(t, rawTool("test--big", result.Result{Data: strings.Repeat("a line of output\n", 500)})),
		Env:   result.Env{Store: ws, Limits: result.Limits{Agent: 1000}},
	})
	l := &logs{}
	cs := connectAt(t, s, l.options(), latestVersion)
	params := &sdk.CallToolParams{Name: "test--big", Arguments: map[string]any{}, Meta: sdk.Meta{sdk.MetaKeyLogLevel: "info"}}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	msgs := l.until(t, "the spill at info", func(m []sdk.LoggingMessageParams) bool { return find(m, "info", ".myelin/tool-results/") != nil })
	if len(msgs) != 1 {
		t.Errorf("at info the host got %v, want the spill only", msgs)
	}
}
