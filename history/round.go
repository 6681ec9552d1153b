package history

import (
	"context"
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
	return insideRound(msgs, 0, at)
}

// BeforeRound is at when InsideRound(msgs, at) is nil, else the point
// just before the answer whose round it is inside: the last point at or
// before at that a fork or a rewind may take.
func BeforeRound(msgs []Message, at int) int {
	return beforeRound(msgs, 0, at)
}

// insideRound is InsideRound of a conversation of which msgs are messages
// off to off+len(msgs)-1: from at back to the first that is not a context
// record (or to its first message), and from at forward to the first
// that is not one (or to its last).
func insideRound(msgs []Message, off, at int) error {
	ans, ok := openAnswer(msgs, off, at)
	if !ok {
		return nil
	}
	for j := at; j < off+len(msgs); j++ {
		m := msgs[j-off]
		if m.Role == Context {
			continue
		}
		if m.Role == User && m.HoldsResults() {
			return fmt.Errorf("point %d: message %d is an answer whose tool calls have their results in message %d, so give %d (before the answer) or %d (after its results): %w", at, ans+1, j+1, ans, j+1, ErrInsideRound)
		}
		break
	}
	return fmt.Errorf("point %d: message %d is an answer whose tool calls have no results yet (its round is running, or stopped), so give %d (before the answer) or less: %w", at, ans+1, ans, ErrInsideRound)
}

// beforeRound is BeforeRound of messages off on, as insideRound reads
// them.
func beforeRound(msgs []Message, off, at int) int {
	if ans, ok := openAnswer(msgs, off, at); ok {
		return ans
	}
	return at
}

// openAnswer is the index of the answer with tool calls that the first at
// messages of a conversation end with (past context records), and whether
// there is one; msgs are its messages off on, as insideRound reads them.
func openAnswer(msgs []Message, off, at int) (int, bool) {
	if at > off+len(msgs) {
		return 0, false
	}
	for i := at - 1; i >= off; i-- {
		m := msgs[i-off]
		if m.Role == Context {
			continue // a record is no answer: look past it, as a recovery does
		}
		return i, m.Role == Assistant && len(m.ToolCalls()) > 0
	}
	return 0, false
}

// Point is a point of a conversation with the messages around it that
// InsideRound and BeforeRound look at, read by ReadPoint: what a fork or
// a rewind checks its point with, without reading the conversation
// whole.
type Point struct {
	// At is the point: how many first messages a fork or a rewind there
	// keeps.
	At int

	msgs []Message // messages off on, around At
	off  int
}

// pointSpan is how many messages ReadPoint reads on either side of the
// point at first: a round's answer and its results are next to it but
// for the context records between them.
const pointSpan = 8

// ReadPoint reads the messages of conversation id in s around point at
// (at < 0: its end, its count from Get) that Point's InsideRound and
// BeforeRound look at: those before at back to the first that is not a
// context record, and after it to the first that is not one — through
// the store's RangeReader, at the cost of those few whatever the
// conversation's length; a store without one has its Messages read
// whole. A point past the end is not refused here (InsideRound says
// nil): the store's Fork or Rewind refuses it.
func ReadPoint(ctx context.Context, s Store, id string, at int) (Point, error) {
	if at < 0 {
		c, err := s.Get(ctx, id)
		if err != nil {
			return Point{}, err
		}
		at = c.Messages
	}
	if _, ok := s.(RangeReader); !ok {
		msgs, err := s.Messages(ctx, id)
		return Point{At: at, msgs: msgs}, err
	}
	lo, hi := max(0, at-pointSpan), at+pointSpan
	msgs, err := Between(ctx, s, id, lo, hi)
	if err != nil {
		return Point{}, err
	}
	// back, each read twice the last, while all before at are records
	for span := pointSpan; lo > 0 && lo+len(msgs) >= at && allContext(msgs[:at-lo]); span *= 2 {
		from := max(0, lo-span)
		more, err := Between(ctx, s, id, from, lo)
		if err != nil {
			return Point{}, err
		}
		if len(more) != lo-from {
			// rewound meanwhile (by a writer not holding the claim the
			// caller holds, if any): read it whole, at one moment
			all, err := s.Messages(ctx, id)
			return Point{At: at, msgs: all}, err
		}
		lo = from
		msgs = append(more[:len(more):len(more)], msgs...)
	}
	// forward, while the last read was full and all from at are records
	for span := pointSpan; lo+len(msgs) == hi && allContext(msgs[at-lo:]); span *= 2 {
		more, err := Between(ctx, s, id, hi, hi+span)
		if err != nil {
			return Point{}, err
		}
		msgs = append(msgs[:len(msgs):len(msgs)], more...)
		hi += span
	}
	return Point{At: at, msgs: msgs, off: lo}, nil
}

// InsideRound is InsideRound of the conversation p was read from, at p.At.
func (p Point) InsideRound() error { return insideRound(p.msgs, p.off, p.At) }

// BeforeRound is BeforeRound of the conversation p was read from, at p.At.
func (p Point) BeforeRound() int { return beforeRound(p.msgs, p.off, p.At) }

// allContext reports whether every one of msgs is a context record.
func allContext(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role != Context {
			return false
		}
	}
	return true
}
