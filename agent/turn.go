package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/telemetry"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/window"
)

// ErrHandedOver, as the cause of a turn's context
// (context.WithCancelCause), stops the turn without ending it, so that
// another process continues it (Continue): an answer cut mid-stream is not
// stored — the next holder sends that request again — while the results
// of a tool round stopped midway are stored, as on any cancel, and the
// claim is released. A queued turn is handed back so when the process
// running it stops (server.Server.Shutdown). It must not be used for a
// turn no one will continue: the conversation would wait for an answer.
var ErrHandedOver = errors.New("the turn was handed over, to be continued by another process")

// Turn runs one turn of conversation id: the prompt as a user message, then
// requests and tool rounds until the turn ends. on receives events as they
// happen; it may be nil. When ctx is cancelled the stream and the tools
// stop, and what was stored stays a valid conversation.
//
// The turn holds the conversation's claim from start to end (one writer at
// a time, contract §7): another writer's live claim fails the turn with a
// *history.HeldError naming it, or is waited for when a.Wait is set. A
// turn whose claim is taken over stops, with an error wrapping
// history.ErrClaimLost, having written nothing since.
func (a *Agent) Turn(ctx context.Context, id, prompt string, on func(Event)) (TurnResult, error) {
	return a.traced(ctx, id, &prompt, on)
}

// turn is Turn under the conversation's claim; with a nil prompt it is
// Continue's: the prompt is stored already, and a turn that ended is left.
//
// It reads from the top as what a turn does. begin readies the turn;
// then each pass of the loop is one request and what follows from its
// answer: ask fits the request to the window and sends it (again, when
// it failed before anything of its answer was shown, retry.go; once
// more, made smaller, when the provider refuses it as too long); a
// request that failed ends the turn (fail); an answer the provider
// refused meets the refusal guard (refused); the answer is stored
// (answered) and, when it makes no calls, ends the turn; at the round
// limit its calls are answered unrun (overLimit); else they run as a
// round (round, round.go: the gate checks each before it runs) and
// their results are stored before the next request is sent.
func (a *Agent) turn(ctx context.Context, id string, prompt *string, on func(Event)) (_ TurnResult, err error) {
	t, ended, err := a.begin(ctx, id, prompt, on)
	switch {
	case err != nil:
		return TurnResult{}, err
	case ended:
		return t.tr, nil
	}
	defer t.workers.Close()
	defer func() {
		if err == nil {
			t.packAtEnd()
		}
	}()
	for {
		x, err := t.ask()
		if err != nil || x == nil { // nil: a budget stopped the turn
			return t.tr, err
		}
		if x.err != nil {
			return t.tr, t.fail(x, x.err)
		}
		t.count(x.resp)
		if a.RefusalGuard && x.resp.Refused {
			switch step, err := t.refused(x); {
			case err != nil:
				return t.tr, err
			case step == withheld:
				continue
			case step == refusedTwice:
				return t.tr, nil
			}
		}
		calls, err := t.answered(x.resp)
		if err != nil || calls == 0 {
			return t.tr, err
		}
		if why := t.budget.afterAnswer(t.tr.Usage); why != "" {
			return t.tr, t.overBudgetCalls(x.resp.Message, calls, why)
		}
		if t.tr.Rounds == t.maxRounds {
			return t.tr, t.overLimit(x.resp.Message, calls)
		}
		t.tr.Rounds++
		endTurn, err := t.round(x.resp.Message, calls)
		switch {
		case err != nil:
			return t.tr, err
		case ctx.Err() != nil:
			return t.tr, ctx.Err()
		case endTurn:
			t.tr.Reason = "tool_end_turn"
			return t.tr, nil
		}
	}
}

// turning is one turn as it runs: what its steps share, made once a turn
// (begin).
type turning struct {
	a   *Agent
	id  string
	on  func(Event)
	ctx context.Context // the turn's, cancelled when it is stopped
	// providerCtx is ctx telling each retry of a request as it is about to be
	// made (a Retry event), and each wait at its key's rate limiter (a
	// Waiting event)
	providerCtx context.Context
	// kept is ctx without its cancellation: what is committed even when
	// ctx is cancelled (contract §7); lazy is kept committing without
	// waiting for the disk
	kept, lazy context.Context
	sz         sizing
	sent       *sent // keeps the requests the turn sends (requests.go)
	// workers run the calls of the turn's rounds; keeper keeps each
	// result as its call finishes (round.go)
	workers   *tool.Workers
	keeper    *keeper
	versions  versions // the file versions its rounds kept (journal.go)
	maxRounds int
	budget    budget // what the turn may spend (budget.go)
	// settings are stored with the turn's first answer, when they changed
	// (withSettings; nil once stored)
	settings *history.Settings
	// droppable: the conversation is new and is deleted, not stored, if
	// its first request never reaches the provider; reached: a request
	// of the turn did (or may have)
	droppable, reached bool
	// newestAttempt is the newest attempt of the request being sent that
	// a retry or a wait at the rate limiter was told for (retryNotice,
	// waitNotice; read by send, retry.go)
	newestAttempt atomic.Int32
	tr            TurnResult
}

// begin readies a turn of conversation id: it answers the calls a stopped
// process left without results (recover), reads where a continued turn
// (prompt nil) stands — ended says it has ended, t.tr how —, sizes the
// turn's requests, checks their settings against those last stored, and
// stores the prompt.
func (a *Agent) begin(ctx context.Context, id string, prompt *string, on func(Event)) (t *turning, ended bool, err error) {
	defs := a.toolDefsAhead() // beside the reads; waited for before the sizing
	defer defs()
	rec, err := a.recover(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if rec.Finished+rec.Rerun+rec.Interrupted > 0 {
		on(Event{Kind: Notice, Text: rec.String()})
	}
	// The turn holds the claim and has said it started (Started): what it
	// reads and the prompt are read and stored whatever ctx says, so a
	// cancel from now on ends the turn at its request, with the prompt and
	// a cut answer kept (on every store alike).
	kept := context.WithoutCancel(ctx)
	// a cost budget prices every stored answer: it reads them all
	st, _, err := a.load(kept, id, a.MaxCost > 0 || a.MaxConversationCost > 0)
	if err != nil {
		return nil, false, err
	}
	t = &turning{a: a, id: id, on: on, ctx: ctx, maxRounds: a.roundLimit()}
	if prompt == nil {
		if t.tr, ended = continuingOf(&st, t.maxRounds); ended {
			return t, true, nil
		}
	}
	// The budgets are read once a turn, the conversation's cost so far
	// with them; one that cannot be held fails the turn before its
	// prompt is stored.
	if t.budget, err = a.newBudget(&st, t.tr.Usage, time.Now()); err != nil {
		return nil, false, err
	}
	t.ctx = withSpending(t.ctx, &t.budget) // its calls' subagents run under it and charge it
	defs()
	if t.sz, err = a.sizing(kept, id); err != nil {
		return nil, false, err
	}
	t.settings = a.checkSettings(t.sz, &st, on)
	if prompt != nil {
		if err := t.store(kept, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: result.WellFormed(*prompt)}}}); err != nil {
			return nil, false, err
		}
	}
	t.droppable = a.droppable(prompt, &st, t.sz.conv)
	t.providerCtx = provider.WithWaitNotice(provider.WithRetryNotice(t.ctx, a.retryNotice(on, &t.newestAttempt)), a.waitNotice(on, &t.newestAttempt))
	t.sent = a.sending(id)
	t.sz.sent, t.sz.spend, t.sz.marks = t.sent, &t.budget, &markTry{}
	t.kept = kept
	t.lazy = history.Lazy(t.kept)
	t.workers, t.keeper = &tool.Workers{}, newKeeper(a.Store, t.lazy, id, 0)
	return t, false, nil
}

// packAtEnd has the store keep the conversation's mark anew, its view
// packed, when enough was stored past the pack it keeps (keepMark, end):
// at a turn's end, off the rounds' path, so that the next process to
// resume the conversation reads its window as one value. A read that
// fails here fails the next turn's first read too: it is not said twice.
func (t *turning) packAtEnd() {
	st, g, err := t.a.load(t.kept, t.id, false)
	if err != nil || st.end()-st.packed < packMin && !summarised(&st) {
		// too little past the pack for packDue, and no summary whose
		// view the turn's last answer may have moved the mark's place
		// to (fit's keepMark ran before that answer): nothing gathered,
		// nothing set — a turn of a short conversation pays the read,
		// not a walk of it
		return
	}
	t.a.keepMark(t.kept, t.id, &st, g, t.sz.marks, true, t.on)
}

// summarised reports whether a summary stands in st's conversation: read
// from a mark past place 0 (only a summary moves one there), or holding
// a record that summarises.
func summarised(st *readState) bool {
	if st.tail.From() > 0 {
		return true
	}
	for _, m := range st.tail.Messages() {
		if m.Role == history.Context && m.Edit != nil && m.Edit.Summary != nil {
			return true
		}
	}
	return false
}

// roundLimit is the bound of a turn's tool rounds: MaxRounds, or
// DefaultMaxRounds.
func (a *Agent) roundLimit() int {
	if a.MaxRounds <= 0 {
		return DefaultMaxRounds
	}
	return a.MaxRounds
}

// reply is one request of a turn and what came of it.
type reply struct {
	resp     provider.Response
	streamed strings.Builder // the answer's text as it streamed: what the user saw
	thought  bool            // some of the answer's thinking streamed: the user saw it
	// err is why the request failed: the provider's error, or the
	// too-long retry's
	err error
	// blocked is the provider's error when it blocked the request for
	// what it holds, before any output, and the refusal guard is on:
	// resp is then an answer that refused, and err nil
	blocked error
}

// shown reports whether anything of x's answer was shown as it streamed:
// its text or its thinking. (A tool call is shown when it runs, once the
// answer is whole.)
func (x *reply) shown() bool { return x.streamed.Len() > 0 || x.thought }

// ask fits the turn's next request to the window (fit) and sends it
// (send: again, while it fails before anything of its answer was shown
// and a resend may mend it, retry.go); when the provider refuses it as
// longer than the window before any text streamed, it makes room and
// sends it once more (retryTooLong). Its error is a failure to fit the
// request, which ends the turn as it is; a request that failed is x.err,
// met by fail.
func (t *turning) ask() (x *reply, err error) {
	// fitting may send a request of its own (a summary): its waits and
	// retries are told as the turn's are
	req, place, size, done, err := t.a.fit(t.providerCtx, t.id, t.sz, t.on, 0, &t.tr)
	if why := budgetStopped(err); why != "" {
		return nil, t.budgetStop(why)
	}
	if err != nil {
		return nil, err
	}
	if len(done) > 0 {
		t.budget.warm = false // fitting changed the prefix the cache holds
	}
	if why := t.budget.beforeRequest(t.tr.Usage, size); why != "" {
		return nil, t.budgetStop(why)
	}
	x = &reply{}
	x.resp, x.err = t.send(x, req, place, size)
	t.reached = t.reached || !provider.NeverReached(x.err)
	if refused, limit, ok := tooLong(x.err); ok && x.streamed.Len() == 0 {
		if t.retryTooLong(x, refused, limit, done); budgetStopped(x.err) != "" {
			return nil, t.budgetStop(budgetStopped(x.err))
		}
	}
	// A request the provider blocked for what it holds, before any
	// output, is to the guard an answer that refused. (err is checked
	// first: errors.As allocates its target.)
	if x.err != nil && t.a.RefusalGuard && x.streamed.Len() == 0 {
		if b, ok := provider.IsBlocked(x.err); ok {
			x.blocked, x.err = x.err, nil
			x.resp = provider.Response{Message: history.Message{Role: history.Assistant}, StopReason: b.Reason, Refused: true}
		}
	}
	return x, nil
}

// complete sends req, whose answer will be stored at place, streaming its
// text into x and the turn's events; size is req as estimated.
func (t *turning) complete(ctx context.Context, x *reply, req provider.Request, place int, size window.Count) (provider.Response, error) {
	t.sent.arm(&req, place)
	req.OnThinking = func(s string) {
		x.thought = true
		t.on(Event{Kind: Thinking, Text: s})
	}
	return t.a.send(ctx, t.id, req, size, t.sz.context, func(s string) {
		x.streamed.WriteString(s)
		t.on(Event{Kind: TextDelta, Text: s})
	})
}

// retryTooLong meets the provider's refusal of x's request as longer than
// the context window (refused: its size in tokens, limit: the window, as
// the provider gave them): the estimate was off, the window is smaller
// than myelin was told, or the conversation is from before myelin kept it
// within the window. It makes room and sends the request once more; a
// second such refusal is x.err, saying what making room did (done: what
// fitting the first request did, then the second's).
func (t *turning) retryTooLong(x *reply, refused, limit int, done []string) {
	t.on(Event{Kind: Notice, Text: "the provider refused the request as longer than the context window; making room and trying once more"})
	if note := t.a.learnWindow(limit); note != "" {
		t.on(Event{Kind: Notice, Text: note})
	}
	refusal := x.err
	t.sent.keep(t.ctx, false, nil, refusal)
	telemetry.ContextEdit(t.ctx, telemetry.Edit{Kind: telemetry.EditTooLong, Before: refused, Limit: limit})
	// The resend is checked as any request: the refused one cost nothing,
	// but making room may have (a summary).
	req, place, size, more, err := t.a.fit(t.providerCtx, t.id, t.sz, t.on, max(refused, 1), &t.tr)
	done = append(done, more...)
	if err == nil && len(more) > 0 {
		t.budget.warm = false // fitting changed the prefix the cache holds
	}
	if why := t.budget.beforeRequest(t.tr.Usage, size); err == nil && why != "" {
		err = &budgetStop{why: why}
	}
	if err != nil {
		x.err = errors.Join(refusal, err)
		return
	}
	x.resp, x.err = t.send(x, req, place, size)
	if _, _, again := tooLong(x.err); again {
		x.err = fmt.Errorf("the provider refused the request as too long twice; before trying again myelin had: %s: %w", orNothing(done), x.err)
	}
}

// fail ends the turn on err, the failure of x's request, and returns the
// turn's error. What the user saw is what is stored (contract §7): the
// answer as far as it streamed (CutAnswer); when some of it was shown and
// the turn was not stopped, a Notice says so (cutNotice). A turn handed
// over (ErrHandedOver) stores nothing: whoever continues it sends the
// request again. A droppable conversation whose request never reached
// the provider stores nothing either: claimed deletes it once its claim
// is released (unreachedError).
func (t *turning) fail(x *reply, err error) error {
	if errors.Is(context.Cause(t.ctx), ErrHandedOver) {
		t.sent.keep(t.ctx, true, nil, err)
		return err
	}
	if t.droppable && !t.reached && x.streamed.Len() == 0 {
		return &unreachedError{err: err}
	}
	if serr := t.store(t.kept, t.withSettings(CutAnswer(x.streamed.String()))); serr != nil {
		return errors.Join(err, serr)
	}
	t.sent.keep(t.ctx, true, nil, err)
	if x.shown() && t.ctx.Err() == nil {
		t.on(Event{Kind: Notice, Text: cutNotice(x, err)})
	}
	return err
}

// count adds the usage of resp, an answer, to the turn's, and takes its
// text as the turn's last.
func (t *turning) count(resp provider.Response) {
	if resp.Message.Usage != nil {
		t.tr.Usage.Add(*resp.Message.Usage)
		t.budget.answered(*resp.Message.Usage)
		t.on(Event{Kind: Usage, Usage: *resp.Message.Usage})
	}
	t.tr.Text = textOf(resp.Message)
}

// refused is the refusal guard's step (Agent.RefusalGuard, guard.go) for
// x's answer, which ended with the provider's refusal: withheld, the
// round's results are withheld and the request is to be sent again;
// refusedTwice, the answer is stored without its calls and the turn ends;
// notGuarded, the answer is stored as any other — unless the provider
// blocked the request (x.blocked), which with no results to withhold
// fails the turn as the error it is.
func (t *turning) refused(x *reply) (guardStep, error) {
	step, err := t.a.guard(t.kept, t.id, x.resp, x.streamed.String(), t.on)
	if err != nil {
		return step, err
	}
	switch {
	case step == notGuarded && x.blocked != nil:
		return step, t.fail(x, x.blocked)
	case step == withheld:
		t.sent.keep(t.ctx, false, x.resp.Message.Usage, fmt.Errorf("the model refused (stop reason %q); the refusal guard withheld the round's results and sent the request again", x.resp.StopReason))
	case step == refusedTwice:
		// Stored as the answer (the user saw it), its calls not run.
		if err := t.store(t.kept, t.withSettings(refusedAnswer(x.resp.Message))); err != nil {
			return step, err
		}
		t.sent.keep(t.ctx, true, x.resp.Message.Usage, nil)
		t.on(Event{Kind: Notice, Text: fmt.Sprintf("the model refused again (stop reason %q) with the round's results withheld, so the turn ends; the results stay withheld in later requests, each kept whole in the history and in the workspace file its placeholder names", x.resp.StopReason)})
		t.tr.Reason = RefusedTwice
	}
	return step, nil
}

// answered stores resp, an answer, and returns how many tool calls it
// makes; with none it ends the turn, its stop reason the turn's Reason.
func (t *turning) answered(resp provider.Response) (calls int, err error) {
	calls = callsIn(resp.Message)
	store := t.kept
	if calls > 0 {
		// the results' commit, before anything is sent, syncs this too
		store = t.lazy
	}
	if err := t.store(store, t.withSettings(resp.Message)); err != nil {
		return calls, err
	}
	t.sent.keep(t.ctx, true, resp.Message.Usage, nil)
	if calls == 0 {
		t.tr.Reason = resp.StopReason
		if t.tr.Reason == "" || t.tr.Reason == "stop" {
			t.tr.Reason = "end_turn"
		}
	}
	return calls, nil
}

// overLimit ends a turn that reached its round limit with the calls of
// answer m (calls of them) to run: they are answered, so the conversation
// stays valid, but not run.
func (t *turning) overLimit(m history.Message, calls int) error {
	msg := fmt.Sprintf("the turn reached its limit of %d tool rounds, so these calls were not run; the user can continue the conversation to go on", t.maxRounds)
	if err := t.answerUnrun(m, calls, msg); err != nil {
		return err
	}
	t.on(Event{Kind: Notice, Text: fmt.Sprintf("stopped after %d tool rounds (the round limit); continue the conversation to go on", t.maxRounds)})
	t.tr.Reason = "round_limit"
	return nil
}

// answerUnrun stores the results of answer m's calls (calls of them),
// unrun, each an error saying why (msg): the conversation stays valid.
func (t *turning) answerUnrun(m history.Message, calls int, msg string) error {
	answer := history.Message{Role: history.User, Parts: make([]history.Part, 0, calls)}
	for _, c := range m.Parts {
		if c.Type == history.ToolCallPart {
			answer.Parts = append(answer.Parts, history.Part{Type: history.ToolResultPart, CallID: c.CallID, Text: msg, IsError: true})
		}
	}
	return t.store(t.kept, answer)
}

// withSettings is m with the settings the turn's first answer is stored
// with, when they changed (checkSettings); once given, they are not given
// again.
func (t *turning) withSettings(m history.Message) history.Message {
	m.Settings, t.settings = t.settings, nil
	return m
}

// store appends m to the turn's conversation under ctx (the turn's, or
// one of its kept contexts) and, once it is stored, says so.
func (t *turning) store(ctx context.Context, m history.Message) error {
	return t.a.store(ctx, t.id, t.on, m)
}

// store appends m to conversation id and, once it is stored, says so.
func (a *Agent) store(ctx context.Context, id string, on func(Event), m history.Message) error {
	if err := a.Store.Append(ctx, id, m); err != nil {
		return err
	}
	on(Event{Kind: Stored, Message: &m})
	return nil
}

// callsIn is how many tool calls m makes.
func callsIn(m history.Message) int {
	n := 0
	for _, p := range m.Parts {
		if p.Type == history.ToolCallPart {
			n++
		}
	}
	return n
}

// The markers that end a cut answer's stored text (CutAnswer): the model
// reads them in every later request, so it knows its answer did not reach
// its end and that the user saw only what precedes.
const (
	CutMarker     = "[cut off here: this answer stopped before it was finished (the user stopped it, or the connection or the request failed); the user saw only the text above]"
	NoTextMarker  = "[no answer: the request was stopped or failed before any text of it arrived; the user saw nothing of it]"
	cutSeparation = "\n\n"
)

// CutAnswer is the assistant message stored for an answer cut off
// mid-stream: the text that had streamed (what the user saw), then a
// text part holding CutMarker (or NoTextMarker alone when nothing had
// streamed), with Cut set. Tool calls that had streamed, in whole or in
// part, are not in it: they were not run. It keeps the conversation valid
// on both wires — an assistant message of text between two user messages.
func CutAnswer(streamed string) history.Message {
	m := history.Message{Role: history.Assistant, Cut: true}
	if streamed == "" {
		m.Parts = []history.Part{{Type: history.TextPart, Text: NoTextMarker}}
		return m
	}
	m.Parts = []history.Part{
		{Type: history.TextPart, Text: result.WellFormed(streamed)},
		{Type: history.TextPart, Text: cutSeparation + CutMarker},
	}
	return m
}

// orNothing joins what was done, or says nothing was.
func orNothing(done []string) string {
	if len(done) == 0 {
		return "found nothing more to take out"
	}
	return strings.Join(done, "; ")
}

func textOf(m history.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == history.TextPart {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
