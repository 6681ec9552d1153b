package window

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

func rtext(role history.Role, s string) history.Message {
	return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
}

// A first prompt of 85% of the budget (a pasted document): the summary
// request that sends it is about 88% of the budget — over the high mark,
// within the window — and is sent (found in review: Cut wanted it under the
// high mark, so no summary was ever possible).
func TestCutSendsAnOlderPartThatFitsTheBudgetThoughOverTheHighMark(t *testing.T) {
	const budget = 10000
	stored := []history.Message{
		rtext(history.User, strings.Repeat("d", 8500*35/10)), // 8,500 tokens at 3.5 bytes a token
		rtext(history.Assistant, "read it"),
		rtext(history.User, strings.Repeat("q", 1200*35/10)),
		rtext(history.Assistant, strings.Repeat("a", 400*35/10)),
		rtext(history.User, "next"),
	}
	p := Policy{}
	if _, err := p.Cut(budget, 0, stored); err != nil {
		t.Errorf("Cut: %v (the summary request of the first two messages would be about %d tokens, within the budget of %d)", err, 8500+10+300, budget)
	}
}
