package ratelimit

import "context"

// modelKey is the context key of the model WithModel sets.
type modelKey struct{}

// WithModel is ctx carrying the model a request asks for, for a sender
// that waits at a Limiter to name the Key's Model by (internal/send's
// Sender.WithLimiter): the wires know the model per request, the sender
// only the bytes. It must carry a model's name, nothing else.
func WithModel(ctx context.Context, model string) context.Context {
	return context.WithValue(ctx, modelKey{}, model)
}

// ModelOf is the model WithModel set on ctx, or "" when none was.
func ModelOf(ctx context.Context) string {
	m, _ := ctx.Value(modelKey{}).(string)
	return m
}
