package telemetry

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metrics' attribute sets are made once for each model and tool and
// kept: a set is sorted and hashed when made, which would otherwise be
// most of what recording a request's metrics costs.

// chatMeasures are the attribute sets of one model's requests: the
// duration's, and the token usage's for input and for output.
type chatMeasures struct {
	base, input, output metric.MeasurementOption
	kvs                 []attribute.KeyValue // base's, for an error's set
}

type chatKey struct{ provider, model string }

// maxMeasured bounds each cache: past it, sets are made for each use and
// not kept (a model name from a user is not to grow the process).
const maxMeasured = 256

var measures struct {
	sync.RWMutex
	chat map[chatKey]*chatMeasures
	tool map[string]metric.MeasurementOption
}

// chatMeasuresOf are the attribute sets of the requests to model of
// provider.
func chatMeasuresOf(provider, model string) *chatMeasures {
	k := chatKey{provider, model}
	measures.RLock()
	m := measures.chat[k]
	measures.RUnlock()
	if m != nil {
		return m
	}
	kvs := []attribute.KeyValue{
		attribute.String(keyOperation, operationChat),
		attribute.String(keyProvider, provider),
		attribute.String(keyRequestModel, model),
	}
	with := func(more ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), kvs...), more...)...))
	}
	m = &chatMeasures{base: with(), input: with(attribute.String(keyTokenType, "input")),
		output: with(attribute.String(keyTokenType, "output")), kvs: kvs}
	measures.Lock()
	if measures.chat == nil {
		measures.chat = map[chatKey]*chatMeasures{}
	}
	if len(measures.chat) < maxMeasured {
		measures.chat[k] = m
	}
	measures.Unlock()
	return m
}

// toolMeasureOf is the attribute set of the calls of tool name that did
// not fail.
func toolMeasureOf(name string) metric.MeasurementOption {
	measures.RLock()
	o, ok := measures.tool[name]
	measures.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(attribute.String(keyOperation, operationTool), attribute.String(keyToolName, name)))
	measures.Lock()
	if measures.tool == nil {
		measures.tool = map[string]metric.MeasurementOption{}
	}
	if len(measures.tool) < maxMeasured {
		measures.tool[name] = o
	}
	measures.Unlock()
	return o
}
