package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
)

// pricesFlagHelp is --prices' help, on run, chat, serve and history.
const pricesFlagHelp = "read prices from `FILE` over the built-in table (default: the user's prices.json in the configuration directory, when there is one; docs/cost.md)"

// costPhrase is c as the token line ends: "cost $0.0123", "cost at least
// $0.0123 (why)" or "cost unknown (why)".
func costPhrase(c price.Cost) string {
	s := c.String()
	if strings.HasPrefix(s, "cost ") {
		return s
	}
	return "cost " + s
}

// turnCost is the cost of the requests the reporter saw answered, each at
// the session's model: "" when none reported a usage.
func (s *session) turnCost(rep *reporter) string {
	rep.mu.Lock()
	usages := append([]history.Usage(nil), rep.usages...)
	rep.mu.Unlock()
	if len(usages) == 0 {
		return ""
	}
	tb := s.prices
	if tb == nil {
		tb = price.Builtin()
	}
	costs := make([]price.Cost, len(usages))
	for i, u := range usages {
		costs[i] = tb.Cost(s.agent.Model, u)
	}
	return "; " + costPhrase(price.Sum(costs...))
}

// shownCosts are a conversation's priced requests, by the index of the
// message or record holding each, for history show.
type shownCosts struct {
	priced price.Priced
	table  *price.Table
	byMsg  map[int]price.Cost // the requests of each message or record, summed
	byKind map[kindAt]price.Cost
	turnAt map[int]price.Turn // the turns by their prompt's index
}

func newShownCosts(tb *price.Table, msgs []history.Message) *shownCosts {
	p := tb.Conversation(msgs)
	sc := &shownCosts{priced: p, table: tb, byMsg: map[int]price.Cost{}, byKind: map[kindAt]price.Cost{}, turnAt: map[int]price.Turn{}}
	parts := map[int][]price.Cost{}
	for _, tr := range p.Turns {
		sc.turnAt[tr.Prompt] = tr
		for _, r := range tr.Requests {
			parts[r.Msg] = append(parts[r.Msg], r.Cost)
			sc.byKind[kindAt{r.Msg, r.Kind}] = r.Cost
		}
	}
	for i, cs := range parts {
		sc.byMsg[i] = price.Sum(cs...)
	}
	return sc
}

// kindAt names one priced request: the message or record holding its
// usage, and its kind (price.Request.Kind).
type kindAt struct {
	msg  int
	kind string
}

// requestCost is "; cost …" for the request of kind ("answer", "summary",
// "refusal") whose usage message i holds, "" when it has none or sc is
// nil.
func (sc *shownCosts) requestCost(i int, kind string) string {
	if sc == nil {
		return ""
	}
	c, ok := sc.byKind[kindAt{i, kind}]
	if !ok {
		return ""
	}
	return "; " + costPhrase(c)
}

// turnStarts reports whether message i is a turn's prompt; false when
// sc is nil.
func (sc *shownCosts) turnStarts(i int) bool {
	if sc == nil {
		return false
	}
	_, ok := sc.turnAt[i]
	return ok
}

// turnLine writes the cost of the turn whose prompt is message i, when it
// made requests.
func (sc *shownCosts) turnLine(w io.Writer, i int) {
	if sc == nil || i < 0 {
		return
	}
	tr, ok := sc.turnAt[i]
	if !ok || len(tr.Requests) == 0 {
		return
	}
	fmt.Fprintf(w, "[turn from message %d: %s, %s]\n", i+1, plural(len(tr.Requests), "request", "requests"), costPhrase(tr.Cost))
}

// total writes the conversation's cost and the prices it was priced at.
func (sc *shownCosts) total(w io.Writer) {
	if sc == nil {
		return
	}
	n := 0
	for _, tr := range sc.priced.Turns {
		n += len(tr.Requests)
	}
	at := "the built-in prices of " + sc.table.Date
	if len(sc.table.Overrides) > 0 {
		at += " with " + strings.Join(sc.table.Overrides, ", ") + " over them"
	}
	fmt.Fprintf(w, "── conversation: %s, %s (at %s; docs/cost.md)\n", plural(n, "request", "requests"), costPhrase(sc.priced.Cost), at)
}

// shownMessage is a stored message or record as history show --json gives
// it: as stored, with cost, the cost of the requests whose usage it holds
// (an answer's; a record's summary and refused answer), and, on a turn's
// prompt, turn_cost, the cost of the turn's requests.
type shownMessage struct {
	history.Message
	Cost     *price.JSON `json:"cost,omitempty"`
	TurnCost *price.JSON `json:"turn_cost,omitempty"`
}

// jsonMessages are msgs with their costs, for history show --json.
func (sc *shownCosts) jsonMessages(msgs []history.Message) []shownMessage {
	out := make([]shownMessage, len(msgs))
	for i, m := range msgs {
		out[i].Message = m
		if c, ok := sc.byMsg[i]; ok {
			out[i].Cost = c.JSON()
		}
		if tr, ok := sc.turnAt[i]; ok && len(tr.Requests) > 0 {
			out[i].TurnCost = tr.Cost.JSON()
		}
	}
	return out
}
