package window

import (
	"fmt"
	"math"
	"sort"

	"github.com/myelin-run/myelin/history"
)

// Candidate is a tool result, or a tool call's input, that a Plan takes out
// of requests.
type Candidate struct {
	// Msg and Part are its place: stored[Msg].Parts[Part].
	Msg, Part int
	// CallID names its call.
	CallID string
	// Input is set for a call's input, unset for a result.
	Input bool
	// Bytes and Images are what it sends now.
	Bytes, Images int
}

// Plan is what a Policy takes out of the next request of a conversation.
type Plan struct {
	// Count is the request's size as it stands.
	Count Count
	// Budget is the tokens the request may hold; High and Low are the
	// marks, in tokens.
	Budget, High, Low int
	// Refused is the size the provider said a refused request had (0
	// when the plan is not a refusal's).
	Refused int
	// Clear are the results and inputs to take out, oldest first; none
	// when the request is under the high mark.
	Clear []Candidate
	// After is the request's estimated size once they are out.
	After int
	// Summarise says that taking results out is not enough: it cannot
	// bring the request under the low mark (what is left of the rounds
	// taken out before, and the messages themselves, add up), so the
	// older part of the conversation is better summarised (Policy.Cut
	// says which). Clearing that falls short would leave the request
	// near the high mark, to be cleared a little again at almost every
	// request, breaking the cached prefix each time.
	Summarise bool
}

// Why says what the plan does and why, for people and for the stored edit.
func (p Plan) Why() string {
	if p.Refused > 0 {
		return fmt.Sprintf("the provider refused the request as too long (%s tokens; the window leaves %s for it)", thousands(p.Refused), thousands(p.Budget))
	}
	return fmt.Sprintf("the request would have held about %s tokens, over the high mark of %s (of %s the window leaves for it)", thousands(p.Count.Tokens), thousands(p.High), thousands(p.Budget))
}

// marks are the high and low marks of budget under p.
func (p Policy) marks(budget int) (high, low int) {
	d := p.withDefaults()
	return int(float64(budget) * d.High), int(float64(budget) * d.Low)
}

// round is a tool round among the stored messages: the assistant message
// that asked for calls, and the message holding their results (-1 while
// none).
type round struct{ calls, results int }

// rounds are the tool rounds of stored from place first on, oldest first.
func rounds(t *Tail, first int) []round {
	var rs []round
	for i := first; i < t.End(); i++ {
		m := t.At(i)
		switch {
		case m.Role == history.Assistant && len(m.ToolCalls()) > 0:
			rs = append(rs, round{calls: i, results: -1})
		case m.Role == history.User && len(rs) > 0 && rs[len(rs)-1].results < 0 && m.HoldsResults():
			rs[len(rs)-1].results = i
		}
	}
	return rs
}

// candidates are what round r may give up under e: the inputs of its
// calls longer than minInput bytes, then its results worth a placeholder,
// none already taken out.
func (r round) candidates(t *Tail, e edits, minInput int) []Candidate {
	var cs []Candidate
	for j, p := range t.At(r.calls).Parts {
		if _, done := e.inputs[place{r.calls, p.CallID}]; p.Type == history.ToolCallPart && !done && len(p.Input) > minInput {
			cs = append(cs, Candidate{Msg: r.calls, Part: j, CallID: p.CallID, Input: true, Bytes: len(p.Input)})
		}
	}
	if r.results < 0 {
		return cs
	}
	for j, p := range t.At(r.results).Parts {
		if _, done := e.results[place{r.results, p.CallID}]; p.Type != history.ToolResultPart || done {
			continue
		}
		if n := partBytes(p); n > 2*placeholderBytes || len(p.Images) > 0 {
			cs = append(cs, Candidate{Msg: r.results, Part: j, CallID: p.CallID, Bytes: n, Images: len(p.Images)})
		}
	}
	return cs
}

// Plan decides what leaves the next request of a conversation stored as
// stored (records included), which sends fixed bytes besides its messages
// (FixedBytes) and may hold budget tokens (Window.Budget). Under the high
// mark it takes nothing. Over it, it takes the oldest results (and long
// inputs) out, round by round, until the request is estimated under the
// low mark, keeping the newest KeepRounds rounds — fewer when they alone
// are over the low mark, never the last one. When even that leaves the
// request over the low mark, Summarise is set (and Clear still says what
// clearing would take, for when no summary can be had).
//
// refused, when above 0, is the size in tokens the provider said a
// request it refused as too long had (1 when it did not say; taken as at
// least budget+1, since it did not fit): the
// estimate was off, so the plan takes the request to be that size, scales
// what each result saves alike, and takes out down to the low mark
// whatever the high mark says.
//
// Plan is pure: the same stored conversation gives the same plan, in this
// process or after a restart. Under Off it takes nothing, ever.
func (p Policy) Plan(budget, fixed int, stored []history.Message, refused int) Plan {
	s := read(Whole(stored))
	return p.PlanFor(budget, fixed, &s, refused)
}

// PlanFor is Plan of the conversation s holds, with the edits already gathered: a turn
// gathers them once per request, for the plan and the request's View.
func (p Policy) PlanFor(budget, fixed int, s *Stored, refused int) Plan {
	t := &s.t
	d := p.withDefaults()
	high, low := p.marks(budget)
	c := s.Measure(fixed)
	plan := Plan{Count: c, Budget: budget, High: high, Low: low, After: c.Tokens}
	if d.Off || (refused <= 0 && c.Tokens <= high) {
		return plan
	}
	scale := 1.0
	if refused > 0 {
		refused = max(refused, budget+1) // refused: it did not fit
		plan.Refused = refused
		if refused > c.Tokens {
			scale = float64(refused) / float64(max(c.Tokens, 1))
			plan.After = refused
		}
	}
	saves := func(k Candidate) int {
		n := int(math.Floor(float64(k.Bytes-placeholderBytes)/c.BytesPerToken*scale)) + k.Images*ImageTokens
		return max(n, 0)
	}
	e := s.all
	rs := rounds(t, e.first())
	keep := min(d.KeepRounds, len(rs))
	take := func(r round) {
		for _, k := range r.candidates(t, e, d.MinInput) {
			if plan.After <= low {
				return
			}
			plan.Clear = append(plan.Clear, k)
			plan.After -= saves(k)
		}
	}
	for _, r := range rs[:len(rs)-keep] {
		take(r)
	}
	for ; plan.After > low && keep > 1; keep-- {
		take(rs[len(rs)-keep])
	}
	// A last round that alone does not fit the window (a round bound
	// meant for a larger window, many images): its own results go too,
	// the largest first, rather than send a request bound to be refused.
	// They stay readable through their placeholders.
	if plan.After > budget && len(rs) > 0 {
		last := rs[len(rs)-1].candidates(t, e, d.MinInput)
		sort.SliceStable(last, func(i, j int) bool { return last[i].Bytes > last[j].Bytes })
		for _, k := range last {
			if plan.After <= low {
				break
			}
			plan.Clear = append(plan.Clear, k)
			plan.After -= saves(k)
		}
	}
	// A summary helps only when what it would stand for — all but the
	// last round, less a summary already standing (summarising it again
	// gains nothing) — is more than the room a summary takes; else (a
	// last round over the low mark by itself) it would be asked for at
	// every request and gain nothing.
	kept := 0
	if len(rs) > 0 {
		b, imgs := sizeFrom(t, e, rs[len(rs)-1].calls, t.End())
		kept = int(math.Ceil(float64(b)/c.BytesPerToken*scale)) + imgs*ImageTokens
	}
	if e.summary != nil {
		kept += int(math.Ceil(float64(MessageBytes(summaryMessage(e.summary))) / c.BytesPerToken * scale))
	}
	fixedTokens := int(math.Ceil(float64(fixed) / c.BytesPerToken))
	plan.Summarise = plan.After > low && plan.After-kept-fixedTokens > int(float64(budget)*SummaryShare)
	return plan
}
