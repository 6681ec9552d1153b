package history

import (
	"context"
	"fmt"

	"github.com/myelin-run/myelin/history/internal/record"
)

// RangeReader is a Store that reads part of a conversation's messages at
// the cost of that part, not of the conversation's length: what a check
// of one point needs (ReadPoint), where Messages would read ten thousand
// messages to look at ten. Memory and the durable stores implement it;
// Between reads through it when a store does.
type RangeReader interface {
	// MessagesBetween returns conversation id's messages from index from
	// to index to-1 (numbered from+1 to to), in order, as Messages
	// returns them: a fork's shared ones read through its bases, and all
	// of them as the conversation held them at one moment, never some
	// from before a rewind or switch and some from after. A to past the
	// conversation's end reads to its end (a from past it, none); from
	// < 0 or to < from is an error saying so; an unknown conversation is
	// an error wrapping ErrNotFound. Like Messages' slices, the messages
	// returned are not to be modified.
	MessagesBetween(ctx context.Context, id string, from, to int) ([]Message, error)
}

// Between is conversation id's messages from index from to index to-1
// in s (see RangeReader): through the store's MessagesBetween when it has
// one, else cut from all of its Messages.
func Between(ctx context.Context, s Store, id string, from, to int) ([]Message, error) {
	if r, ok := s.(RangeReader); ok {
		return r.MessagesBetween(ctx, id, from, to)
	}
	if err := record.CheckRange(id, from, to); err != nil {
		return nil, err
	}
	msgs, err := s.Messages(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading messages %d to %d of conversation %s: %w", from, to, id, err)
	}
	return clip(msgs, from, to), nil
}

// clip is msgs[from:to] with from and to cut to len(msgs), its capacity
// clipped so that an append never reaches msgs.
func clip(msgs []Message, from, to int) []Message {
	to = min(to, len(msgs))
	from = min(from, to)
	return msgs[from:to:to]
}
