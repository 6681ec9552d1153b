package telemetry

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}), sdktrace.WithSampler(sampler))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(discardMetrics{})))
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

type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

type discardMetrics struct{}

func (discardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (discardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (discardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (discardMetrics) ForceFlush(context.Context) error                          { return nil }
func (discardMetrics) Shutdown(context.Context) error                            { return nil }
