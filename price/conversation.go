package price

import "github.com/myelin-run/myelin/history"

// Request is one priced provider request of a stored conversation: an
// answer's, a summary's (Edit.Summary) or a refused answer's
// (Edit.Refusal).
type Request struct {
	// Msg is the index of the stored message or record holding the
	// usage.
	Msg int
	// Kind is "answer", "summary" or "refusal".
	Kind string
	// Model is the model the request named: the Settings stored with it
	// or last before it ("" when the conversation stored none).
	Model string
	Usage history.Usage
	Cost  Cost
}

// Turn is the priced requests of one turn: from a prompt (a user message
// that is not tool results) to the next.
type Turn struct {
	// Prompt is the index of the turn's prompt; -1 for what comes before
	// a conversation's first prompt (a message at 0 that is no prompt).
	Prompt   int
	Requests []Request
	// Cost is the sum of the requests' costs.
	Cost Cost
}

// Priced is a stored conversation's cost: per turn, and in all.
type Priced struct {
	Turns []Turn
	Cost  Cost
}

// Conversation prices the requests of a stored conversation, msgs as the
// store gives them: each usage at the model of the Settings stored with
// it or last before it (the first Settings for a request before any; a
// Settings with no model changes nothing). It reads what is stored; a
// request that stored no usage is not counted. A conversation that
// stored no Settings at all costs "unknown": no model is recorded.
func (t *Table) Conversation(msgs []history.Message) Priced {
	return Conversation(t, msgs)
}

// Pricer prices one request's usage under a model, as Table.Cost does.
// It must say Known false for a model it has no price for, never price it
// at 0.
type Pricer interface {
	Cost(model string, u history.Usage) Cost
}

// Conversation prices the requests of a stored conversation with t, as
// Table.Conversation does with a table: for a caller that holds a price
// table only as a Pricer (the server, through agent.Pricer).
func Conversation(t Pricer, msgs []history.Message) Priced {
	return ConversationAt(t, "", msgs)
}

// ConversationAt is Conversation for a caller that knows which model a
// conversation that stored no Settings at all was asked of: model (the
// agent's own, for its budgets); "" is Conversation. It is the one
// definition of what a stored conversation cost: the agent's budgets,
// history show and the API all price through it.
func ConversationAt(t Pricer, model string, msgs []history.Message) Priced {
	for _, m := range msgs {
		if m.Settings != nil && m.Settings.Model != "" {
			model = m.Settings.Model
			break
		}
	}
	var p Priced
	add := func(i int, kind string, u *history.Usage) {
		if u == nil {
			return
		}
		if len(p.Turns) == 0 {
			p.Turns = append(p.Turns, Turn{Prompt: -1})
		}
		turn := &p.Turns[len(p.Turns)-1]
		turn.Requests = append(turn.Requests, Request{Msg: i, Kind: kind, Model: model, Usage: *u, Cost: t.Cost(model, *u)})
	}
	for i, m := range msgs {
		if m.Settings != nil && m.Settings.Model != "" {
			model = m.Settings.Model
		}
		switch {
		case m.Role == history.User && !m.HoldsResults():
			p.Turns = append(p.Turns, Turn{Prompt: i})
		case m.IsRecord() && m.Edit != nil:
			if r := m.Edit.Refusal; r != nil {
				add(i, "refusal", r.Usage)
			}
			if s := m.Edit.Summary; s != nil {
				add(i, "summary", s.Usage)
			}
		case m.Role == history.Assistant:
			add(i, "answer", m.Usage)
		}
	}
	var all []Cost
	for i := range p.Turns {
		tr := &p.Turns[i]
		costs := make([]Cost, len(tr.Requests))
		for j, r := range tr.Requests {
			costs[j] = r.Cost
		}
		tr.Cost = Sum(costs...)
		all = append(all, costs...)
	}
	p.Cost = Sum(all...)
	return p
}
