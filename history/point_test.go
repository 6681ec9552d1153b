package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// roundsWithRecords is a conversation of rounds with runs of n context
// records (n each of runs) between prompts, answers and results, ending
// with an answer whose calls have no results yet and records after it.
func roundsWithRecords(runs ...int) []history.Message {
	txt := func(r history.Role, s string) history.Message {
		return history.Message{Role: r, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	records := func(n int) []history.Message {
		out := make([]history.Message, n)
		for i := range out {
			out[i] = txt(history.Context, "{}")
		}
		return out
	}
	var msgs []history.Message
	for i, n := range runs {
		call := fmt.Sprint("call", i)
		msgs = append(msgs, txt(history.User, "prompt"))
		msgs = append(msgs, records(n)...)
		msgs = append(msgs, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: call, Name: "x--run"}}})
		msgs = append(msgs, records(n)...)
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: call, Text: "ok"}}})
		msgs = append(msgs, records(n)...)
		msgs = append(msgs, txt(history.Assistant, "done"))
	}
	msgs = append(msgs, txt(history.User, "last"))
	msgs = append(msgs, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "open", Name: "x--run"}}})
	return append(msgs, records(runs[len(runs)-1])...)
}

// onlyStore is a store with none of the optional interfaces: ReadPoint
// reads its Messages.
type onlyStore struct{ history.Store }

// ReadPoint judges every point — before, inside and after rounds whose
// answer, results and prompt are apart by runs of context records longer
// than what it reads at first, the end (at < 0) and past it — as
// InsideRound and BeforeRound of the whole conversation do, through a
// store's MessagesBetween and through Messages alike.
func TestReadPointJudgesEveryPointAsTheWholeConversationDoes(t *testing.T) {
	ctx := context.Background()
	msgs := roundsWithRecords(0, 1, 7, 8, 9, 20, 40, 3)
	m := &history.Memory{}
	if err := m.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, "c", msgs...); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]history.Store{"a RangeReader": m, "a store of Messages only": onlyStore{m}} {
		for at := -1; at <= len(msgs)+2; at++ {
			whole := at
			if at < 0 {
				whole = len(msgs)
			}
			p, err := history.ReadPoint(ctx, st, "c", at)
			if err != nil {
				t.Fatalf("%s: ReadPoint(c, %d): %v", name, at, err)
			}
			if p.At != whole {
				t.Fatalf("%s: ReadPoint(c, %d).At = %d; want %d", name, at, p.At, whole)
			}
			if got, want := fmt.Sprint(p.InsideRound()), fmt.Sprint(history.InsideRound(msgs, whole)); got != want {
				t.Fatalf("%s: point %d: InsideRound of the point read says %s; of the whole conversation %s", name, at, got, want)
			}
			if got, want := p.BeforeRound(), history.BeforeRound(msgs, whole); got != want {
				t.Fatalf("%s: point %d: BeforeRound of the point read is %d; of the whole conversation %d", name, at, got, want)
			}
		}
	}
	if _, err := history.ReadPoint(ctx, m, "nobody", 3); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("ReadPoint of an unknown conversation: %v; want ErrNotFound", err)
	}
}

// ReadPoint of a store that reads ranges reads the messages around the
// point, never the conversation whole: at the start, in the middle, at
// the end of 1,000 rounds, and where 20 records stand between an answer
// and its results, a few dozen messages at most.
func TestReadPointReadsOnlyTheMessagesAroundThePoint(t *testing.T) {
	ctx := context.Background()
	runs := make([]int, 1000)
	runs[500] = 20
	msgs := roundsWithRecords(runs...)
	s := storetest.NewCounting(t, "c", msgs...)
	middle := 500*4 + 1 + 1 + 20 // the answer of the round with records, then into its records
	for _, at := range []int{0, 1, middle, middle + 19, len(msgs) / 3, len(msgs), -1} {
		s.Wholes, s.Ranged = 0, 0
		if _, err := history.ReadPoint(ctx, s, "c", at); err != nil {
			t.Fatalf("ReadPoint(c, %d): %v", at, err)
		}
		if s.Wholes != 0 || s.Ranged > 64 {
			t.Fatalf("ReadPoint(c, %d) of %d messages read them whole %d times and %d by range; want none whole and 64 by range at most", at, len(msgs), s.Wholes, s.Ranged)
		}
	}
}
