package telemetry

import "go.opentelemetry.io/otel/metric"

// instruments are the metrics a turn records (the GenAI conventions'
// gen_ai.client.token.usage and gen_ai.client.operation.duration, and
// the tool calls' duration), each with the bucket boundaries the
// conventions advise: the SDK's default ones (0, 5, 10, ... 10000) put
// every request of more than 10,000 tokens in one bucket and every
// request under 5 s in another. A view the user gives the SDK still wins.
type instruments struct {
	tokens    metric.Int64Histogram
	operation metric.Float64Histogram
	tool      metric.Float64Histogram
}

// The conventions' explicit bucket boundaries: tokens by powers of 4
// from 1 to 64M, durations doubling from 10 ms to 81.92 s.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var err error
	if in.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"), metric.WithExplicitBucketBoundaries(tokenBuckets...),
		metric.WithDescription("Number of input and output tokens used.")); err != nil {
		return nil, err
	}
	if in.operation, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...),
		metric.WithDescription("GenAI operation duration.")); err != nil {
		return nil, err
	}
	if in.tool, err = m.Float64Histogram("myelin.tool.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...),
		metric.WithDescription("Duration of a tool call.")); err != nil {
		return nil, err
	}
	return &in, nil
}
