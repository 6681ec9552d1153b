package history_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// InsideRound refuses every point between an answer with tool calls and
// the message with their results — context records between them count
// as inside too — naming the points on either side, and BeforeRound
// moves such a point back to before the answer.
func TestInsideRoundRefusesEveryPointBetweenAnAnswerAndItsResults(t *testing.T) {
	txt := func(r history.Role, s string) history.Message {
		return history.Message{Role: r, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	msgs := []history.Message{
		txt(history.User, "prompt"), // 1
		txt(history.Context, "{}"),  // 2
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "let me"}, {Type: history.ToolCallPart, CallID: "c1", Name: "x--run"}}}, // 3
		txt(history.Context, "{}"), // 4
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "ok"}}}, // 5
		txt(history.Assistant, "done"), // 6
		txt(history.User, "again"),     // 7
		{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "c2", Name: "x--run"}}}, // 8, its round in flight
	}
	for at := 0; at <= len(msgs); at++ {
		err := history.InsideRound(msgs, at)
		inside := at == 3 || at == 4 || at == 8
		if inside != errors.Is(err, history.ErrInsideRound) {
			t.Errorf("point %d: InsideRound gave %v; inside a round: %v", at, err, inside)
			continue
		}
		want, before := "", at
		switch at {
		case 3, 4:
			want, before = "give 2 (before the answer) or 5 (after its results)", 2
		case 8:
			want, before = "no results yet (its round is running, or stopped), so give 7 (before the answer) or less", 7
		}
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("point %d: %q does not say %q", at, err, want)
		}
		if got := history.BeforeRound(msgs, at); got != before {
			t.Errorf("BeforeRound at %d is %d, want %d", at, got, before)
		}
	}
}
