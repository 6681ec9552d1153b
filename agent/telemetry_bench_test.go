package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/telemetry/otlptest"
	"github.com/myelin-run/myelin/tool"
)

// telemetryRounds is the turn BenchmarkTelemetryOverhead runs: this many
// light rounds, then an answer of text.
const telemetryRounds = 10

// BenchmarkTelemetryOverhead measures what telemetry costs a light round,
// side by side in one run: each iteration runs the same turn once with
// telemetry off, once on with the SDK exporting to a discarding exporter
// (a batch span processor and a periodic metric reader, as Setup sets
// them up: the agent's cost of making the spans and recording the
// metrics), and once on exporting over OTLP/HTTP to a receiver on
// loopback (otlptest: the exporter's encoding and sending too, on this
// process's cores), the three taking turns going first. It reports the
// medians per round (off-µs/round, on-µs/round, otlp-µs/round) and the
// medians of each iteration's ratios to off (x-on-paired, x-otlp-paired:
// the goal is ≤ 1.10).
//
// Off, what telemetry adds to a round is calls that return at once:
// off-calls-ns/round times more of them than a round makes (a chat span
// and a tool span started and ended, a context edit and a TraceParent) in
// a loop, and x-off-calls is that over a round's time off (the goal is
// ≤ 0.02).
//
// Cases: anthropic-loopback/10-calls is issue 13's light round — the
// Anthropic wire against the scripted fake on 127.0.0.1, the in-memory
// store, 20 rounds of 10 no-op calls; anthropic-loopback/1-call the same
// with one call a round; in-process/1-call the least a round can be — an
// in-process provider that encodes nothing, 10 rounds of one call: the
// agent's own work and nothing else, where telemetry weighs most. No
// assertion is timed. Run (docs/performance.md has the table):
//
//	go test ./agent -run '^$' -bench TelemetryOverhead -benchtime 40x
func BenchmarkTelemetryOverhead(b *testing.B) {
	if telemetry.On() {
		b.Fatal("telemetry is on before the benchmark turns it on")
	}
	b.Run("anthropic-loopback/10-calls", func(b *testing.B) { loopbackTelemetry(b, overheadCalls) })
	b.Run("anthropic-loopback/1-call", func(b *testing.B) { loopbackTelemetry(b, 1) })
	b.Run("in-process/1-call", func(b *testing.B) {
		a := lightAgent(b)
		telemetryCase(b, telemetryRounds, func() (TurnResult, error) {
			id, err := a.NewConversation(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			return a.Turn(context.Background(), id, "go", nil)
		})
	})
}

// loopbackTelemetry is the case of overheadRounds rounds of calls no-op
// calls each on the Anthropic wire over loopback, the in-memory store.
func loopbackTelemetry(b *testing.B, calls int) {
	w := testWires["anthropic"]
	srv := w.server(b)
	p, err := w.provider(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	noop := tool.MustFunc("noop--run", "Does nothing.", func(ctx context.Context, _ struct{}) (any, error) { return "ok", nil })
	noop.ReadOnly = true
	reg := &tool.Registry{}
	if err := reg.Add(noop); err != nil {
		b.Fatal(err)
	}
	a := &Agent{Provider: p, Store: &history.Memory{}, Tools: reg, Model: w.model}
	script := overheadScript()
	for i := range script {
		if len(script[i].ToolCalls) > calls {
			script[i].ToolCalls = script[i].ToolCalls[:calls]
		}
	}
	telemetryCase(b, overheadRounds, func() (TurnResult, error) {
		id, err := a.NewConversation(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		srv.Push(script...)
		return a.Turn(context.Background(), id, "go", nil)
	})
}

// telemetryCase times turn, a turn of rounds rounds, off, on and on over
// OTLP, and reports the figures BenchmarkTelemetryOverhead says.
func telemetryCase(b *testing.B, rounds int, turn func() (TurnResult, error)) {
	discard, err := discarding()
	if err != nil {
		b.Fatal(err)
	}
	otlp, err := toReceiver(b, otlptest.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	modes := []func() (func(), error){
		func() (func(), error) { return func() {}, nil }, // off
		discard,
		otlp,
	}
	timed := func(use func() (func(), error)) time.Duration {
		restore, err := use()
		if err != nil {
			b.Fatal(err)
		}
		defer restore()
		start := time.Now()
		tr, err := turn()
		took := time.Since(start)
		if err != nil || tr.Rounds != rounds {
			b.Fatalf("the turn: %+v, %v", tr, err)
		}
		return took
	}
	times := make([][]time.Duration, len(modes))
	i := 0
	for b.Loop() {
		for k := range modes {
			m := (i + k) % len(modes) // they take turns going first
			times[m] = append(times[m], timed(modes[m]))
		}
		i++
	}
	med := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	perRound := make([][]float64, len(modes))
	for m := range modes {
		for _, d := range times[m] {
			perRound[m] = append(perRound[m], float64(d.Nanoseconds())/1e3/float64(rounds))
		}
	}
	paired := func(m int) float64 {
		var r []float64
		for j := range times[0] {
			r = append(r, float64(times[m][j])/float64(times[0][j]))
		}
		return med(r)
	}
	off := med(perRound[0])
	b.ReportMetric(off, "off-µs/round")
	b.ReportMetric(med(perRound[1]), "on-µs/round")
	b.ReportMetric(med(perRound[2]), "otlp-µs/round")
	b.ReportMetric(paired(1), "x-on-paired")
	b.ReportMetric(paired(2), "x-otlp-paired")
	calls := offCalls()
	b.ReportMetric(calls, "off-calls-ns/round")
	b.ReportMetric(calls/(off*1000), "x-off-calls")
}

// lightAgent is an agent whose rounds are the lightest: the in-process
// provider answering telemetryRounds rounds of one call of a no-op tool,
// then text, encoding nothing; an in-memory store.
func lightAgent(b *testing.B) *Agent {
	calls := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "toolu_1", Name: "noop", Input: []byte(`{}`)}}}
	done := history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}}
	script := make([]history.Message, 0, telemetryRounds+1)
	for range telemetryRounds {
		script = append(script, calls)
	}
	script = append(script, done)
	reg := &tool.Registry{}
	noop := tool.MustFunc("noop", "Does nothing.", func(ctx context.Context, _ struct{}) (any, error) { return "ok", nil })
	noop.ReadOnly = true
	if err := reg.Add(noop); err != nil {
		b.Fatal(err)
	}
	return &Agent{Provider: &scripted{answers: script, bare: true}, Store: &history.Memory{}, Tools: reg, Model: "m", Env: result.Env{}}
}

// discarding is telemetry on with the SDK set up as Setup sets it up, its
// exporters discarding what they are given.
func discarding() (func() (func(), error), error) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(otlptest.DiscardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(otlptest.DiscardMetrics{})))
	return func() (func(), error) { return telemetry.Use(tp, mp, false) }, nil
}

// toReceiver is telemetry on exporting over OTLP/HTTP to r, as Setup
// would with OTEL_EXPORTER_OTLP_ENDPOINT set to it.
func toReceiver(b *testing.B, r *otlptest.Receiver) (func() (func(), error), error) {
	ctx := context.Background()
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(r.HTTP+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("the trace exporter: %w", err)
	}
	me, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(r.HTTP+"/v1/metrics"))
	if err != nil {
		return nil, fmt.Errorf("the metric exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(te))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)))
	b.Cleanup(func() {
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	})
	return func() (func(), error) { return telemetry.Use(tp, mp, false) }, nil
}

// offCalls is the time, in ns, of the telemetry calls a round makes with
// telemetry off, and more: a chat span and a tool span started and ended,
// a context edit and a TraceParent, each returning at once.
func offCalls() float64 {
	ctx := context.Background()
	const n = 1 << 20
	start := time.Now()
	for range n {
		cctx, chat := telemetry.StartChat(ctx, telemetry.Chat{Model: "m", Wire: "anthropic"})
		chat.End(cctx, telemetry.ChatEnd{FinishReason: "tool_use"})
		tctx, call := telemetry.StartTool(ctx, telemetry.Tool{Name: "noop", CallID: "toolu_1"})
		call.End(tctx, telemetry.ToolEnd{Bytes: 2})
		telemetry.ContextEdit(ctx, telemetry.Edit{Kind: telemetry.EditCleared})
		_ = telemetry.TraceParent(ctx)
	}
	return float64(time.Since(start).Nanoseconds()) / n
}
