package agent

import (
	"context"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/window"
)

// This file is what the agent exports to OpenTelemetry (package telemetry,
// docs/telemetry.md): a turn is an invoke_agent span (traced), each
// provider request a chat span under it (send), each context edit an
// event of it (edited); the tool calls' spans are the dispatcher's
// (package tool). With telemetry off each costs one atomic load.

// traced is claimed — a turn, or a Continue's — within the turn's span.
func (a *Agent) traced(ctx context.Context, id string, prompt *string, on func(Event)) (TurnResult, error) {
	if !telemetry.On() {
		return a.claimed(ctx, id, prompt, on)
	}
	ctx, span := telemetry.StartTurn(ctx, telemetry.Turn{Conversation: id, Model: a.Model, Wire: provider.WireName(a.Provider)})
	tr, err := a.claimed(ctx, id, prompt, on)
	span.End(telemetry.TurnEnd{Reason: tr.Reason, Rounds: tr.Rounds, Usage: usageOf(&tr.Usage), Err: err})
	return tr, err
}

// send sends req, a request of conversation id, to the provider within
// its chat span, which the request's context carries (its retries are
// events of it). size is the request as estimated, limit the window's
// tokens: how full it is.
func (a *Agent) send(ctx context.Context, id string, req provider.Request, size window.Count, limit int, onText func(string)) (provider.Response, error) {
	if !telemetry.On() {
		return a.Provider.Complete(ctx, req, onText)
	}
	outer := ctx
	ctx, chat := telemetry.StartChat(ctx, telemetry.Chat{Conversation: id, Model: req.Model, Wire: provider.WireName(a.Provider),
		MaxTokens: req.MaxTokens, WindowTokens: size.Tokens, WindowLimit: limit})
	ctx = provider.WithRetryNotice(ctx, func(n provider.RetryNotice) {
		chat.Retry(n.Attempt, n.Status)
		provider.NoticeRetry(outer, n) // the turn's observer, if any
	})
	bytes, keep := 0, req.OnBody
	req.OnBody = func(b []byte) {
		bytes = len(b)
		if keep != nil {
			keep(b)
		}
	}
	resp, err := a.Provider.Complete(ctx, req, onText)
	end := telemetry.ChatEnd{FinishReason: resp.StopReason, RequestBytes: bytes, Err: err}
	if u := resp.Message.Usage; u != nil {
		end.Usage = usageOf(u)
	}
	chat.End(ctx, end)
	return resp, err
}

// edited records a context edit as an event of the turn's span (the one
// ctx carries): counts and tokens, never what was taken out.
func edited(ctx context.Context, kind string, e *history.Edit) {
	if !telemetry.On() {
		return
	}
	te := telemetry.Edit{Kind: kind}
	if e != nil {
		te.Before, te.After, te.Cleared = e.Before, e.After, len(e.Cleared)
	}
	telemetry.ContextEdit(ctx, te)
}

func usageOf(u *history.Usage) telemetry.Usage {
	return telemetry.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}
