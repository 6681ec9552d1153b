package agent

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
	"github.com/myelin-run/myelin/workspace"
)

// A long session (issue 11, "How it is measured"): rounds of one call whose
// result is resultChars characters, against the fake provider with a
// 40,000-token window that refuses what does not fit and reports as cached
// the longest prefix a request shares with a recent one.
type longSession struct {
	wire        string
	rounds      int
	perTurn     int // rounds a turn; the session is rounds/perTurn turns
	resultChars int
	policy      window.Policy
	restartAt   int // after this many turns the process restarts (0: never)
}

const (
	sessionWindow    = 40000
	sessionMaxTokens = 4096
)

// sessionRun is what a long session did.
type sessionRun struct {
	requests  [][]byte
	stats     providertest.Stats
	err       error // the turn that failed, if one did
	turns     int   // turns finished
	cleared   int   // results and inputs taken out
	edits     int   // Context records stored
	summaries int
}

// summaryAnswer is what the fake model answers a summary request with.
const summaryAnswer = "The user asked to emit numbered results round after round. Every round so far emitted its result; the results are in the workspace files the placeholders name. Go on emitting the next round."

// run plays the session and returns what happened; it fails tb only for
// setup errors, so that a policy that dies can be measured.
func (s longSession) run(tb testing.TB) sessionRun {
	tb.Helper()
	dir := tb.TempDir()
	srv := testWires[s.wire].server(tb)
	srv.Window = sessionWindow
	answered := 0 // answers to requests that are not summary requests
	srv.Respond = func(req providertest.Request) providertest.Step {
		if strings.Contains(req.LastUserText(), "Write that summary now") {
			return providertest.Step{Text: summaryAnswer}
		}
		turn, pos := answered/(s.perTurn+1), answered%(s.perTurn+1)
		answered++
		if pos == s.perTurn {
			return providertest.Step{Text: fmt.Sprintf("turn %d done", turn)}
		}
		n := turn*s.perTurn + pos
		return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "emit", Input: fmt.Sprintf(`{"n":%d,"chars":%d}`, n, s.resultChars)}}}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.Close() })
	emit := emitTool(tb)
	open := func() *Agent {
		store, err := sqlite.OpenWith(filepath.Join(dir, "history.db"), sqlite.Options{Relaxed: true})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { store.Close() })
		p, err := testWires[s.wire].provider(srv.URL)
		model := testWires[s.wire].model
		if err != nil {
			tb.Fatal(err)
		}
		reg := &tool.Registry{}
		if err := reg.Add(append(ws.Tools(), emit)...); err != nil {
			tb.Fatal(err)
		}
		return &Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: model,
			ContextWindow: sessionWindow, MaxTokens: sessionMaxTokens, MaxRounds: s.perTurn + 1, Context: s.policy}
	}
	a := open()
	ctx := context.Background()
	// one id for every run, so that two runs send the same requests on a
	// wire that names the conversation in them (the Responses API's
	// prompt_cache_key)
	const id = "20260101-000000-5e5510a0"
	if err := a.OpenConversation(ctx, id); err != nil {
		tb.Fatal(err)
	}
	var run sessionRun
	for turn := range s.rounds / s.perTurn {
		if s.restartAt > 0 && turn == s.restartAt {
			a.Store.Close()
			a = open()
		}
		tr, err := a.Turn(ctx, id, fmt.Sprintf("turn %d: emit the next %d rounds", turn, s.perTurn), func(e Event) {
			if e.Kind == ContextEdit {
				run.edits++
				run.cleared += len(e.Edit.Cleared)
				if e.Edit.Summary != nil {
					run.summaries++
				}
			}
		})
		if err == nil && tr.Reason != "end_turn" {
			err = fmt.Errorf("turn %d ended with %q after %d rounds", turn, tr.Reason, tr.Rounds)
		}
		if err != nil {
			run.err = err
			break
		}
		run.turns++
	}
	run.requests, run.stats = srv.Requests(), srv.Stats()
	return run
}

func TestALongSessionStaysInItsWindowAndKeepsTheCacheOnBothWires(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200-round session")
	}
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			run := longSession{wire: wire, rounds: 200, perTurn: 20, resultChars: 4000}.run(t)
			if run.err != nil {
				t.Fatalf("the session stopped after %d turns: %v", run.turns, run.err)
			}
			st := run.stats
			if st.Refused > 0 || st.Largest+sessionMaxTokens > sessionWindow {
				t.Fatalf("%d requests refused; the largest was %d tokens (window %d, answer %d)", st.Refused, st.Largest, sessionWindow, sessionMaxTokens)
			}
			if r := st.CacheRatio(); r < 0.70 {
				t.Errorf("cached input was %.1f%% of all input over the session; want at least 70%%", 100*r)
			}
			// 200 rounds leave more placeholders than the low mark holds:
			// the older part was summarised, and the summary stands for it
			if run.summaries == 0 {
				t.Fatal("no summary was written in 200 rounds")
			}
			for i, body := range run.requests {
				if bytes.Contains(body, []byte("Write that summary now")) {
					if i+1 == len(run.requests) || !bytes.Contains(run.requests[i+1], []byte(summaryAnswer)) || bytes.Contains(run.requests[i+1], []byte(`call_0"`)) {
						t.Fatalf("the request after the summary request does not send the summary in place of the oldest messages")
					}
					// the summary request is the conversation's own prefix
					prev := providertest.Canonical(run.requests[i-1])
					sum := providertest.Canonical(body)
					if shared := commonPrefix(prev, sum); shared < len(sum)/2 {
						t.Errorf("the summary request shares %d of its %d bytes with the request before it; want it to be that request's prefix", shared, len(sum))
					}
					break
				}
			}
			t.Logf("%d requests, cache %.1f%%, %d breaks, %d edits (%d summaries), %d results cleared, largest request %d tokens",
				st.Requests, 100*st.CacheRatio(), st.Breaks, run.edits, run.summaries, run.cleared, st.Largest)
		})
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestALongSessionSendsTheSameRequestsAcrossARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("two 200-round sessions")
	}
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			s := longSession{wire: wire, rounds: 200, perTurn: 20, resultChars: 4000}
			unbroken := s.run(t)
			s.restartAt = 5
			broken := s.run(t)
			if unbroken.err != nil || broken.err != nil {
				t.Fatalf("unbroken: %v; with a restart: %v", unbroken.err, broken.err)
			}
			if unbroken.edits == 0 {
				t.Fatal("setup: the session made no edit, so the restart proves nothing")
			}
			if len(broken.requests) != len(unbroken.requests) {
				t.Fatalf("%d requests with a restart, %d without", len(broken.requests), len(unbroken.requests))
			}
			for i := range unbroken.requests {
				if !bytes.Equal(broken.requests[i], unbroken.requests[i]) {
					t.Fatalf("request %d differs after the restart:\n%.300s\n%.300s", i, broken.requests[i], unbroken.requests[i])
				}
			}
		})
	}
}

func TestALongSessionOfBigRoundsFinishesWithoutARefusal(t *testing.T) {
	if testing.Short() {
		t.Skip("a long session")
	}
	// rounds of about 6,000 tokens: 15% of the window each
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			run := longSession{wire: wire, rounds: 40, perTurn: 20, resultChars: 23000}.run(t)
			if run.err != nil || run.stats.Refused > 0 {
				t.Fatalf("after %d turns: %v; %d requests refused", run.turns, run.err, run.stats.Refused)
			}
			t.Logf("%d requests, cache %.1f%%, %d breaks, %d edits (%d summaries)", run.stats.Requests, 100*run.stats.CacheRatio(), run.stats.Breaks, run.edits, run.summaries)
		})
	}
}

// BenchmarkContextPolicy plays the 200-round session (rounds of about
// 1,000 tokens in a 40,000-token window) under three policies side by
// side: myelin's (clear in batches down to the low mark), a naive trimmer
// that takes out just enough at every request (the low mark at the high
// one), and none (the conversation dies when it outgrows the window). It
// reports the share of input read from the cache, how often the cached
// prefix broke, and the requests answered before the session ended. Run:
//
//	go test ./agent -run '^$' -bench ContextPolicy -benchtime 1x
func BenchmarkContextPolicy(b *testing.B) {
	for _, p := range []struct {
		name   string
		policy window.Policy
	}{
		{"myelin", window.Policy{}},
		{"every-request", window.Policy{Low: window.DefaultHigh}},
		{"none", window.Policy{Off: true}},
	} {
		b.Run(p.name, func(b *testing.B) {
			var run sessionRun
			for range b.N {
				run = longSession{wire: "anthropic", rounds: 200, perTurn: 20, resultChars: 4000, policy: p.policy}.run(b)
			}
			b.ReportMetric(100*run.stats.CacheRatio(), "%cached")
			b.ReportMetric(float64(run.stats.Breaks), "breaks")
			b.ReportMetric(float64(run.stats.Requests), "answered")
			b.ReportMetric(float64(run.turns*20), "rounds-done")
		})
	}
}
