package provider

import (
	"context"
	"errors"
	"net/http"

	"github.com/myelin-run/myelin/ratelimit"
)

// This file tells a wire's rate limiter of a refusal that came inside an
// answer of 200 (docs/ratelimits.md, "Refusals inside a stream"): the
// gate observed the answer's status and headers as its stream began, and
// the stream then ended with an error event — Anthropic's
// rate_limit_error or overloaded_error (on every platform, Bedrock's
// exception frames read as such events), OpenAI's error chunk, the
// Responses API's error event or failed response, Gemini's error object.
// The limiter is told of it as of the same refusal answered with its
// status (ratelimit.Limiter.ObserveInStream).

// ObserveStreamError tells l, under key (the key the request waited
// under: its gate's), of err, the error a wire's stream reader ended an
// answer of 200 with, when err keeps the error event as the provider sent
// it (anthropic-sdk-go's *Error for an error event, openai.ErrorObject):
// ObserveStreamEvent of that event. An err of a status of 400 or more
// (its answer, which the gate observed) or that keeps no event is not
// told. A nil l (no limiter) is told nothing.
func ObserveStreamError(ctx context.Context, l *ratelimit.Limiter, key ratelimit.Key, err error) {
	if l == nil || err == nil || statusOf(err) >= http.StatusBadRequest {
		return
	}
	var raw rawError
	if errors.As(err, &raw) {
		ObserveStreamEvent(ctx, l, key, []byte(raw.RawJSON()))
	}
}

// ObserveStreamEvent tells l, under key, of event, an error event or
// object read from inside the stream of an answer of 200 in the shape of
// an error answer's body ({"type":"error","error":{...}},
// {"error":{...}}): ratelimit.FromResponse reads it with status 0 and the
// limiter observes it (ratelimit.Limiter.ObserveInStream; one that names
// no refusal, fault nor wait says nothing of the limits and is not told).
// The event's message is not kept. The limiter's own error (a Shared
// store that could not save) is not the request's: the process's state
// is updated all the same.
func ObserveStreamEvent(ctx context.Context, l *ratelimit.Limiter, key ratelimit.Key, event []byte) {
	if l == nil || len(event) == 0 {
		return
	}
	o := ratelimit.FromResponse("", 0, nil, event, l.Now())
	o.From = key.Endpoint
	_ = l.ObserveInStream(ctx, key, o)
}
