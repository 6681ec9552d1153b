package telemetry

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metrics' attribute sets are made once for each model and tool and
// kept: a set is sorted and hashed when made, which would otherwise be
// most of what recording a request's metrics costs.

// chatMeasures are what one model's requests are recorded with: their
// span's name, and the attribute sets of the duration and of the token
// usage for input and for output, each as the options Record takes (a
// slice made once: a variadic call would make one each time).
type chatMeasures struct {
	name                string // the span's: "chat {model}"
	base, input, output []metric.RecordOption
	kvs                 []attribute.KeyValue // base's, for an error's set
}

// toolMeasures are what one tool's calls are recorded with: their span's
// name and the duration's attribute set.
type toolMeasures struct {
	name string // "execute_tool {name}"
	ok   []metric.RecordOption
}

type chatKey struct{ provider, model string }

// maxMeasured bounds each cache: past it, sets are made for each use and
// not kept (a model name from a user is not to grow the process).
const maxMeasured = 256

var measures struct {
	sync.RWMutex
	chat map[chatKey]*chatMeasures
	tool map[string]*toolMeasures
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
	with := func(more ...attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), kvs...), more...)...))}
	}
	m = &chatMeasures{name: operationChat + " " + model, base: with(), input: with(attribute.String(keyTokenType, "input")),
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

// toolMeasuresOf are what the calls of tool name are recorded with.
func toolMeasuresOf(name string) *toolMeasures {
	measures.RLock()
	o := measures.tool[name]
	measures.RUnlock()
	if o != nil {
		return o
	}
	o = &toolMeasures{name: operationTool + " " + name,
		ok: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(keyOperation, operationTool), attribute.String(keyToolName, name)))}}
	measures.Lock()
	if measures.tool == nil {
		measures.tool = map[string]*toolMeasures{}
	}
	if len(measures.tool) < maxMeasured {
		measures.tool[name] = o
	}
	measures.Unlock()
	return o
}
