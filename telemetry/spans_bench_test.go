package telemetry

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/telemetry/otlptest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkARoundsSpans is what one light round's telemetry costs: a chat
// span and a tool span started and ended, with their metrics — off, on
// with the SDK set up as Setup does (a batch span processor, a periodic
// metric reader) with exporters that discard, and on with a sampler that
// drops every trace. Run:
//
//	go test ./telemetry -run '^$' -bench ARoundsSpans -benchmem
func BenchmarkARoundsSpans(b *testing.B) {
	round := func() {
		ctx := context.Background()
		cctx, chat := StartChat(ctx, Chat{Conversation: "c", Model: "m", Wire: "anthropic", MaxTokens: 100, WindowTokens: 10, WindowLimit: 1000})
		chat.End(cctx, ChatEnd{FinishReason: "tool_use", Usage: Usage{Input: 1, Output: 2, CacheRead: 3}, RequestBytes: 100})
		tctx, call := StartTool(ctx, Tool{Name: "noop", CallID: "toolu_1", Arguments: []byte(`{}`)})
		call.End(tctx, ToolEnd{Bytes: 2})
	}
	b.Run("off", func(b *testing.B) {
		for b.Loop() {
			round()
		}
	})
	b.Run("on", func(b *testing.B) { onRound(b, round, sdktrace.AlwaysSample()) })
	// the sampler dropping every trace: the metrics are recorded still
	b.Run("on-sampled-out", func(b *testing.B) { onRound(b, round, sdktrace.NeverSample()) })
}

func onRound(b *testing.B, round func(), sampler sdktrace.Sampler) {
	{
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(otlptest.DiscardSpans{}), sdktrace.WithSampler(sampler))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(otlptest.DiscardMetrics{})))
		restore, err := Use(tp, mp, false)
		if err != nil {
			b.Fatal(err)
		}
		defer restore()
		for b.Loop() {
			round()
		}
	}
}
