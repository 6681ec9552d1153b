package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// scripted is an in-process provider: it builds and encodes the Anthropic
// request as the wire would, then answers from its script with no network,
// so that a benchmark measures the framework and not the provider.
type scripted struct {
	answers []history.Message
	n       int
	// bare skips the encoding: the provider costs nothing but the answer.
	bare bool
}

func (s *scripted) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	if s.bare {
		// nothing
	} else if _, err := anthropic.Body(req, true); err != nil {
		return provider.Response{}, err
	}
	m := s.answers[s.n%len(s.answers)]
	s.n++
	stop := "end_turn"
	if len(m.ToolCalls()) > 0 {
		stop = "tool_use"
	}
	m.Usage = &history.Usage{Input: 1, Output: 1}
	return provider.Response{Message: m, StopReason: stop}, nil
}

// BenchmarkToolRound measures the framework's overhead per tool round of 10
// trivial calls, provider time excluded: the provider is in-process and
// only builds and encodes the request as the wire would. A turn of 1 round
// and a turn of 11 rounds are measured side by side; the overhead of one
// round is the difference over 10: committing the answer that asks for the
// calls, dispatching and converting the round, committing the results and
// building the next request from the store. Both with a store that syncs
// every commit (the default) and a relaxed one, to show what the two
// fsyncs of a round cost. Target: ≤ 2 ms. Run:
//
//	go test ./agent -run '^$' -bench ToolRound -count 6
func BenchmarkToolRound(b *testing.B) {
	calls := history.Message{Role: history.Assistant}
	for i := 0; i < 10; i++ {
		calls.Parts = append(calls.Parts, history.Part{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "echo--ok", Input: json.RawMessage(`{"n":1}`)})
	}
	done := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}}
	type in struct {
		N int `json:"n"`
	}
	reg := &tool.Registry{}
	// it changes nothing: its calls run side by side, as those of the
	// rounds these figures were first taken of did (a round of calls that
	// change state runs them one at a time: docs/overhead.md)
	echo := tool.MustFunc("echo--ok", "Says ok.", func(ctx context.Context, _ in) (any, error) { return "ok", nil })
	echo.ReadOnly = true
	_ = reg.Add(echo)
	for _, bc := range []struct {
		sync    string
		relaxed bool
		rounds  int
	}{{"synced", false, 1}, {"synced", false, 11}, {"relaxed", true, 1}, {"relaxed", true, 11}} {
		rounds := bc.rounds
		b.Run(fmt.Sprintf("%s-store/turn-of-%d-rounds", bc.sync, rounds), func(b *testing.B) {
			store, err := sqlite.OpenWith(filepath.Join(b.TempDir(), "h.db"), sqlite.Options{Relaxed: bc.relaxed})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			script := make([]history.Message, 0, rounds+1)
			for i := 0; i < rounds; i++ {
				script = append(script, calls)
			}
			script = append(script, done)
			a := &Agent{Provider: &scripted{answers: script}, Store: store, Tools: reg, Model: "m", Env: result.Env{}}
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				id, err := a.NewConversation(ctx) // a fresh, short conversation each time
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				tr, err := a.Turn(ctx, id, "go", nil)
				if err != nil || tr.Rounds != rounds {
					b.Fatal(tr, err)
				}
			}
		})
	}
}

// BenchmarkAgentRound measures a light round's agent-side work alone: no
// wire (the provider answers from its script and encodes nothing) and no
// durable store (history.Memory). A round is 10 calls of a no-op tool
// (input {"n":1}, checked against its schema); the turn of 11 rounds and
// the turn of 1 are measured side by side, and a round's cost is their
// difference over 10: dispatching and validating the calls, the events,
// building the next request (the window's count, plan and view, the tool
// definitions, the record) and the in-memory appends. Allocations per
// round, unlike times, do not move with the machine's load. Run:
//
//	go test ./agent -run '^$' -bench AgentRound -benchmem -count 6
func BenchmarkAgentRound(b *testing.B) {
	calls := history.Message{Role: history.Assistant}
	for i := 0; i < 10; i++ {
		calls.Parts = append(calls.Parts, history.Part{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "echo--ok", Input: json.RawMessage(`{"n":1}`)})
	}
	done := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}}
	type in struct {
		N int `json:"n"`
	}
	reg := &tool.Registry{}
	// it changes nothing: its calls run side by side, as those of the
	// rounds these figures were first taken of did (a round of calls that
	// change state runs them one at a time: docs/overhead.md)
	echo := tool.MustFunc("echo--ok", "Says ok.", func(ctx context.Context, _ in) (any, error) { return "ok", nil })
	echo.ReadOnly = true
	_ = reg.Add(echo)
	for _, rounds := range []int{1, 11} {
		b.Run(fmt.Sprintf("turn-of-%d-rounds", rounds), func(b *testing.B) {
			script := make([]history.Message, 0, rounds+1)
			for i := 0; i < rounds; i++ {
				script = append(script, calls)
			}
			script = append(script, done)
			a := &Agent{Provider: &scripted{answers: script, bare: true}, Store: &history.Memory{}, Tools: reg, Model: "m", Env: result.Env{}}
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				id, err := a.NewConversation(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				tr, err := a.Turn(ctx, id, "go", nil)
				if err != nil || tr.Rounds != rounds {
					b.Fatal(tr, err)
				}
			}
		})
	}
}

// BenchmarkNextRequest builds the next request of a stored conversation of
// 1k, 10k and 100k messages: reading it from SQLite, decoding it, and
// building the Anthropic request body. "warm" is a running agent's next
// request (the store has read the conversation before and reads only what
// is new); "cold" is the first request after a restart (a fresh store reads
// it all, and a fresh wire has kept nothing). Target: ≤ 50 ms at 10k,
// ≤ 30 ms at 100k warm. Warm reports its two halves apart: request-ms, the
// agent's Request (the store's read, the record, the tool definitions, the
// window's view), and body-ms, the Anthropic wire's body for it
// (Provider.Body: built on the bytes it kept of the previous request).
// Run:
//
//	go test ./agent -run '^$' -bench NextRequest -count 6
func BenchmarkNextRequest(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		path := filepath.Join(b.TempDir(), "h.db")
		store, err := sqlite.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		a := &Agent{Store: store, Tools: &tool.Registry{}, Model: "m"}
		id, _ := a.NewConversation(ctx)
		var batch []history.Message
		for i := 0; i < n; i += 2 {
			batch = append(batch, roundOf(i)...)
			if len(batch) >= 1000 {
				if err := store.Append(ctx, id, batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		var inRequest, inBody time.Duration // the two halves, for the report
		wire := func() *anthropic.Provider {
			p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				b.Fatal(err)
			}
			return p
		}
		prov := wire() // a running agent's: it has built this conversation's requests before
		build := func(b *testing.B, a *Agent, prov *anthropic.Provider) {
			start := time.Now()
			req, err := a.Request(ctx, id)
			if err != nil || len(req.Messages) < n {
				b.Fatal(len(req.Messages), err)
			}
			built := time.Now()
			if _, err := prov.Body(req); err != nil {
				b.Fatal(err)
			}
			inRequest += built.Sub(start)
			inBody += time.Since(built)
		}
		b.Run(fmt.Sprintf("%dk-messages/warm", n/1000), func(b *testing.B) {
			build(b, a, prov)
			inRequest, inBody = 0, 0
			for b.Loop() {
				build(b, a, prov)
			}
			b.ReportMetric(float64(inRequest.Microseconds())/1000/float64(b.N), "request-ms/op")
			b.ReportMetric(float64(inBody.Microseconds())/1000/float64(b.N), "body-ms/op")
		})
		b.Run(fmt.Sprintf("%dk-messages/cold", n/1000), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				fresh, err := sqlite.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				build(b, &Agent{Store: fresh, Tools: a.Tools, Model: "m"}, wire())
				b.StopTimer()
				fresh.Close()
				b.StartTimer()
			}
		})
		// a running agent's next request after a round: an answer and
		// its result are new since the last (stored untimed)
		b.Run(fmt.Sprintf("%dk-messages/warm-after-a-round", n/1000), func(b *testing.B) {
			build(b, a, prov)
			inRequest, inBody = 0, 0
			i := n
			for b.Loop() {
				b.StopTimer()
				if err := store.Append(ctx, id, roundOf(i)...); err != nil {
					b.Fatal(err)
				}
				i += 2
				b.StartTimer()
				build(b, a, prov)
			}
			b.ReportMetric(float64(inRequest.Microseconds())/1000/float64(b.N), "request-ms/op")
			b.ReportMetric(float64(inBody.Microseconds())/1000/float64(b.N), "body-ms/op")
		})
		store.Close()
	}
}

// roundOf is the messages of BenchmarkNextRequest's round i: an answer
// with a call, and its result.
func roundOf(i int) []history.Message {
	return []history.Message{
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
			{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
			Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}},
	}
}

// BenchmarkToolRoundLoopback is BenchmarkToolRound over real HTTP: the
// Anthropic wire against the scripted fake server on 127.0.0.1, so the
// per-round figure includes the SDK's request, the loopback round trip,
// the fake server's answer and the event-stream parsing. Run:
//
//	go test ./agent -run '^$' -bench ToolRoundLoopback -count 6
func BenchmarkToolRoundLoopback(b *testing.B) {
	type in struct {
		N int `json:"n"`
	}
	reg := &tool.Registry{}
	// it changes nothing: its calls run side by side, as those of the
	// rounds these figures were first taken of did (a round of calls that
	// change state runs them one at a time: docs/overhead.md)
	echo := tool.MustFunc("echo--ok", "Says ok.", func(ctx context.Context, _ in) (any, error) { return "ok", nil })
	echo.ReadOnly = true
	_ = reg.Add(echo)
	var calls []providertest.ToolCall
	for i := 0; i < 10; i++ {
		calls = append(calls, providertest.ToolCall{ID: fmt.Sprintf("toolu_%d", i), Name: "echo--ok", Input: `{"n":1}`})
	}
	for _, rounds := range []int{1, 11} {
		b.Run(fmt.Sprintf("turn-of-%d-rounds", rounds), func(b *testing.B) {
			srv := providertest.NewAnthropic(b)
			prov, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1})
			if err != nil {
				b.Fatal(err)
			}
			store, err := sqlite.Open(filepath.Join(b.TempDir(), "h.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			a := &Agent{Provider: prov, Store: store, Tools: reg, Model: "m"}
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				id, err := a.NewConversation(ctx)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < rounds; i++ {
					srv.Push(providertest.Step{ToolCalls: calls})
				}
				srv.Push(providertest.Step{Text: "done"})
				b.StartTimer()
				tr, err := a.Turn(ctx, id, "go", nil)
				if err != nil || tr.Rounds != rounds {
					b.Fatal(tr, err)
				}
			}
		})
	}
}
