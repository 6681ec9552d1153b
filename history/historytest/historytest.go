// Package historytest makes stored conversations for tests of what reads
// them: Generated, a conversation made up at random from a seed with
// every kind of message and record a turn's readers meet. It must not be
// used outside tests.
package historytest

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
)

// spot is a call's result or input in a generated conversation: its
// stored message and call id.
type spot struct {
	msg    int
	callID string
}

// Generated is a stored conversation made up at random from seed: turns
// of a prompt, tool rounds (long inputs, results with and without images)
// and an answer; usage present, absent or counting nothing; records that
// clear results and inputs, summaries whose Through moves on, settings
// changes, and sometimes a last turn that did not end (no answer).
func Generated(seed int64) []history.Message {
	r := rand.New(rand.NewSource(seed))
	var msgs []history.Message
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	text := func(n int) string { return strings.Repeat(string(rune('a'+r.Intn(26))), n) }
	usage := func() *history.Usage {
		switch r.Intn(5) {
		case 0:
			return nil
		case 1:
			return &history.Usage{Output: 1 + r.Intn(50)} // counts no request
		}
		return &history.Usage{Input: 100 + r.Intn(5000), Output: 1 + r.Intn(300), CacheRead: r.Intn(3) * 1000, CacheWrite: r.Intn(2) * 500}
	}
	answer := func(m history.Message) history.Message {
		clock = clock.Add(time.Duration(r.Intn(600)) * time.Second)
		m.Role, m.Usage, m.Time = history.Assistant, usage(), clock
		if r.Intn(6) == 0 {
			m.Settings = &history.Settings{Model: fmt.Sprintf("model-%d", r.Intn(3)), System: text(3), Tools: text(2)}
		}
		return m
	}
	var ends []int     // places a summary may end at: prompts and answers
	var results []spot // results and inputs a record may clear
	var inputs []spot
	lastThrough := 0
	record := func() {
		e := &history.Edit{Why: "generated"}
		for range r.Intn(4) {
			if len(results) > 0 {
				p := results[r.Intn(len(results))]
				e.Cleared = append(e.Cleared, history.Cleared{Msg: p.msg, CallID: p.callID, Text: "[cleared " + text(r.Intn(40)) + "]", Chars: 10})
			}
			if len(inputs) > 0 && r.Intn(2) == 0 {
				p := inputs[r.Intn(len(inputs))]
				e.Cleared = append(e.Cleared, history.Cleared{Msg: p.msg, CallID: p.callID, Input: true, Text: `{"cleared":true}`, Chars: 10})
			}
		}
		if r.Intn(6) == 0 {
			// a clearing of a place still to come (no turn writes one; a
			// tail must carry it all the same)
			e.Cleared = append(e.Cleared, history.Cleared{Msg: len(msgs) + 1 + r.Intn(6), CallID: "call-0", Text: "[cleared ahead]"})
		}
		if r.Intn(2) == 0 {
			var later []int
			for _, p := range ends {
				if p > lastThrough {
					later = append(later, p)
				}
			}
			if len(later) > 0 {
				through := later[r.Intn(len(later))]
				lastThrough = through
				e.Summary = &history.Summary{Through: through, Text: "summary " + text(20+r.Intn(200)), Usage: usage()}
			}
		}
		if r.Intn(8) == 0 {
			e = nil // a record that edits nothing
		}
		msgs = append(msgs, history.Message{Role: history.Context, Edit: e})
	}
	turns := 2 + r.Intn(10)
	for t := range turns {
		if r.Intn(4) == 0 {
			record()
		}
		ends = append(ends, len(msgs))
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: text(10 + r.Intn(400))}}})
		for range r.Intn(4) {
			calls := answer(history.Message{Parts: []history.Part{{Type: history.TextPart, Text: text(r.Intn(50))}}})
			res := history.Message{Role: history.User}
			for c := range 1 + r.Intn(2) {
				id := fmt.Sprintf("call-%d", c) // ids repeat across rounds, as they may
				calls.Parts = append(calls.Parts, history.Part{Type: history.ToolCallPart, CallID: id, Name: "tool", Input: []byte(`{"x":"` + text(r.Intn(4000)) + `"}`)})
				inputs = append(inputs, spot{len(msgs), id})
				p := history.Part{Type: history.ToolResultPart, CallID: id, Text: text(r.Intn(3000)), IsError: r.Intn(5) == 0}
				if r.Intn(6) == 0 {
					p.Images = []result.Image{{MIMEType: "image/png", Data: []byte("png")}}
				}
				res.Parts = append(res.Parts, p)
				results = append(results, spot{len(msgs) + 1, id})
			}
			ends = append(ends, len(msgs))
			msgs = append(msgs, calls)
			if r.Intn(5) == 0 {
				record() // a record between a round's calls and its results
			}
			msgs = append(msgs, res)
		}
		if t == turns-1 && r.Intn(3) == 0 {
			break // a turn that did not end: continued later
		}
		if r.Intn(5) == 0 {
			record()
		}
		ends = append(ends, len(msgs))
		msgs = append(msgs, answer(history.Message{Parts: []history.Part{{Type: history.TextPart, Text: text(r.Intn(600))}}}))
	}
	if r.Intn(3) == 0 {
		record()
	}
	return msgs
}
