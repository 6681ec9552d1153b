package window

import (
	"fmt"
	"math"
	"strings"

	"github.com/myelin-run/myelin/history"
)

// SummaryShare is the share of the budget a summary is asked to stay
// within, and the room kept for it when choosing how much it stands for.
const SummaryShare = 0.10

// SummaryPrompt is the text of the user message that asks the model for a
// summary, at the end of a request that sends the part to summarise. It
// asks for what a successor needs to go on: the user's requests, what was
// done and found, where things are (the workspace files that hold the
// results), and what remains.
func SummaryPrompt(words int) string {
	return fmt.Sprintf(`[myelin: this conversation has outgrown the model's context window. The conversation so far will be replaced by your summary of it in every later request; the whole of it stays in the history store, and every tool result named by a workspace file can be read again with workspace--read.
Write that summary now, as plain text, in at most about %d words: what the user asked for, in their words where it matters; what was done and what was found, with the workspace paths, commands and values that matter; the decisions taken and why; what is in progress and what remains to be done. Do not call any tool; answer with the summary alone.]`, words)
}

// SummaryText is the text of the user message that stands for the stored
// messages before through in later requests, given the model's summary.
func SummaryText(through int, summary string) string {
	return fmt.Sprintf("[myelin: the first %d messages of this conversation were replaced by this summary, written by the model when the conversation outgrew the context window; the whole conversation stays in the history store, and tool results named by a workspace file can be read again with workspace--read.]\n\n%s",
		through, strings.TrimSpace(summary))
}

// SummaryRequest is the messages a summary request sends: the request's
// messages before place through (View, with every stored edit applied),
// then a user message holding SummaryPrompt. Its prefix is the prefix of
// the conversation's own requests, so the provider's cache serves it.
func SummaryRequest(stored []history.Message, through, words int) []history.Message {
	return SummaryRequestFor(Gather(stored), through, words)
}

// SummaryRequestFor is SummaryRequest of the conversation s holds.
func SummaryRequestFor(s *Stored, through, words int) []history.Message {
	msgs := viewWith(&s.t, s.all, through)
	return append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: SummaryPrompt(words)}}})
}

// SummaryWords is how many words a summary is asked for under budget: about
// SummaryShare of it, at 0.75 words a token, at least 100.
func SummaryWords(budget int) int {
	return max(100, int(float64(budget)*SummaryShare*0.75))
}

// boundaryIn reports whether a summary may end before t's message at
// place i: the request would then go on from a message that may follow
// the summary's user message — an assistant message that follows a user
// message, or a user message that holds no tool results.
func boundaryIn(t *Tail, i int) bool {
	m := t.At(i)
	switch m.Role {
	case history.User:
		return !m.HoldsResults()
	case history.Assistant:
		for j := i - 1; j >= t.From(); j-- { // the place a summary ends at is no record: From is never passed
			if r := t.At(j).Role; r != history.Context {
				return r == history.User
			}
		}
	}
	return false
}

// Cut says where the summary of the older part of stored should end: the
// place of the first stored message it does not stand for. It keeps
// the longest tail of newest messages that fits, with the summary's room
// and the fixed bytes, under the low mark — at least the last round. The
// part before it must fit the budget to be sent in the summary request;
// when it does not, Cut ends the summary earlier, at the last place where
// it does, and the caller summarises again once that summary stands (each
// summary request then sends the one before and what follows it). It fails
// when no place will do: the conversation has no place to cut, or its
// oldest part alone is over the high mark.
func (p Policy) Cut(budget, fixed int, stored []history.Message) (int, error) {
	return p.CutFor(budget, fixed, Gather(stored))
}

// CutFor is Cut of the conversation s holds.
func (p Policy) CutFor(budget, fixed int, s *Stored) (int, error) {
	t := &s.t
	_, low := p.marks(budget)
	c := s.Measure(fixed)
	e := s.all
	first := e.first()
	from, n := t.From(), t.End()
	// bytes[i] is what stored[i] sends; pre[i-from] the sum before i, from
	// first.
	pre := make([]int, n-from+1)
	imgs := make([]int, n-from+1)
	for i := from; i < n; i++ {
		m := t.At(i)
		x := i - from
		pre[x+1], imgs[x+1] = pre[x], imgs[x]
		if i < first || m.Role == history.Context {
			continue
		}
		for _, part := range m.Parts {
			q, _ := e.part(i, part)
			pre[x+1] += partBytes(q)
			imgs[x+1] += len(q.Images)
		}
	}
	tokens := func(bytes, images int) int {
		return int(math.Ceil(float64(bytes)/c.BytesPerToken)) + images*ImageTokens
	}
	summaryBytes := 0
	if e.summary != nil {
		summaryBytes = MessageBytes(summaryMessage(e.summary))
	}
	fixedTokens := tokens(fixed, 0)
	room := int(float64(budget) * SummaryShare)
	ask := tokens(len(SummaryPrompt(SummaryWords(budget)))+partOverhead, 0)
	var places []int
	for i := first + 1; i < n; i++ {
		if boundaryIn(t, i) {
			places = append(places, i)
		}
	}
	if len(places) == 0 {
		return 0, fmt.Errorf("the conversation is %s tokens and has no place where a summary could end: it is one round from its start", thousands(c.Tokens))
	}
	cut := places[len(places)-1] // at least the last round stays
	for _, b := range places {
		if fixedTokens+room+tokens(pre[n-from]-pre[b-from], imgs[n-from]-imgs[b-from]) <= low {
			cut = b
			break
		}
	}
	// The summary request must fit what the window leaves besides the
	// answer's room (budget), not the high mark: it is one request.
	prefix := func(b int) int { return fixedTokens + tokens(summaryBytes+pre[b-from], imgs[b-from]) + ask }
	if prefix(cut) <= budget {
		return cut, nil
	}
	for i := len(places) - 1; i >= 0; i-- {
		if b := places[i]; b < cut && prefix(b) <= budget {
			return b, nil
		}
	}
	return 0, fmt.Errorf("the oldest part of the conversation that a summary could stand for is %s tokens, over the %s the window leaves for a request: it cannot be sent to be summarised", thousands(prefix(places[0])), thousands(budget))
}
