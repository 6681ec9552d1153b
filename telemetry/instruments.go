package telemetry

import "go.opentelemetry.io/otel/metric"

// instruments are the metrics a turn records (the GenAI conventions'
// gen_ai.client.token.usage and gen_ai.client.operation.duration, and
// the tool calls' duration).
type instruments struct {
	tokens    metric.Int64Histogram
	operation metric.Float64Histogram
	tool      metric.Float64Histogram
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var err error
	if in.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used.")); err != nil {
		return nil, err
	}
	if in.operation, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration.")); err != nil {
		return nil, err
	}
	if in.tool, err = m.Float64Histogram("myelin.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call.")); err != nil {
		return nil, err
	}
	return &in, nil
}
