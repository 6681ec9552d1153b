package telemetry

import (
	"context"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The GenAI conventions' explicit bucket boundaries of their histograms
// (semantic conventions, gen-ai-metrics): the SDK's default boundaries
// (0, 5, 10, 25, ... 10000) put every request of more than 10,000 tokens in
// one bucket and every request under 5 s in another.
var (
	conventionTokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	conventionDurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// The histograms a turn records have the buckets the conventions advise,
// whatever view the SDK is given (none, here): the token usage's from 1
// to 64M tokens, the operation's and the tool's durations from 10 ms to
// 82 s.
func TestTheHistogramsHaveTheConventionsBuckets(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	restore, err := Use(tracenoop.NewTracerProvider(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), false)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	ctx := context.Background()
	cctx, chat := StartChat(ctx, Chat{Conversation: "c", Model: "m", Wire: "anthropic"})
	chat.End(cctx, ChatEnd{FinishReason: "end_turn", Usage: Usage{Input: 100000, Output: 10}})
	xctx, call := StartTool(ctx, Tool{Name: "workspace--read", CallID: "call_1"})
	call.End(xctx, ToolEnd{Bytes: 3})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{
		"gen_ai.client.token.usage":        conventionTokenBuckets,
		"gen_ai.client.operation.duration": conventionDurationBuckets,
		"myelin.tool.duration":             conventionDurationBuckets,
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			bounds, ok := want[m.Name]
			if !ok {
				continue
			}
			seen[m.Name] = true
			var got [][]float64
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					got = append(got, p.Bounds)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got = append(got, p.Bounds)
				}
			default:
				t.Errorf("%s is a %T, want a histogram", m.Name, m.Data)
			}
			for _, b := range got {
				if !slices.Equal(b, bounds) {
					t.Errorf("%s has the buckets %v; want the conventions' %v", m.Name, b, bounds)
				}
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s was not recorded", name)
		}
	}
}
