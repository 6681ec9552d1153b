package history

import (
	"errors"
	"fmt"
)

// ErrInsideRound is wrapped by the error for a fork or a rewind at a point
// inside a round: the first messages it would keep end with an answer
// whose tool calls have no results among them. The next turn of such a
// conversation would take it for a round a crash stopped (agent.Recover)
// and run its calls again, or answer them as interrupted.
var ErrInsideRound = errors.New("the point is inside a round")

// InsideRound checks that a conversation whose messages are msgs may be
// forked or rewound at point at (its first at messages kept): it returns
// an error wrapping ErrInsideRound, naming the points on either side of
// the round, when the last of those messages that is not a context
// record is an answer with tool calls; else nil. A point out of range is
// left for the store to refuse. It reads msgs only from the point back to
// that answer and forward to its results.
func InsideRound(msgs []Message, at int) error {
	ans, ok := openAnswer(msgs, at)
	if !ok {
		return nil
	}
	for j := at; j < len(msgs); j++ {
		m := msgs[j]
		if m.Role == Context {
			continue
		}
		if m.Role == User && holdsResults(m) {
			return fmt.Errorf("point %d: message %d is an answer whose tool calls have their results in message %d, so give %d (before the answer) or %d (after its results): %w", at, ans+1, j+1, ans, j+1, ErrInsideRound)
		}
		break
	}
	return fmt.Errorf("point %d: message %d is an answer whose tool calls have no results yet (its round is running, or stopped), so give %d (before the answer) or less: %w", at, ans+1, ans, ErrInsideRound)
}

// BeforeRound is at when InsideRound(msgs, at) is nil, else the point
// just before the answer whose round it is inside: the last point at or
// before at that a fork or a rewind may take.
func BeforeRound(msgs []Message, at int) int {
	if ans, ok := openAnswer(msgs, at); ok {
		return ans
	}
	return at
}

// openAnswer is the index of the answer with tool calls that the first at
// of msgs end with (past context records), and whether there is one.
func openAnswer(msgs []Message, at int) (int, bool) {
	if at > len(msgs) {
		return 0, false
	}
	for i := at - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == Context {
			continue // a record is no answer: look past it, as a recovery does
		}
		return i, m.Role == Assistant && len(m.ToolCalls()) > 0
	}
	return 0, false
}

// holdsResults reports whether m carries tool results.
func holdsResults(m Message) bool {
	for _, p := range m.Parts {
		if p.Type == ToolResultPart {
			return true
		}
	}
	return false
}
