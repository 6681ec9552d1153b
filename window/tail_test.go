package window

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/result"
)

// generated is a stored conversation made up at random from seed: turns
// of a prompt, tool rounds (long inputs, results with and without images)
// and an answer; usage present, absent or counting nothing; records that
// clear results and inputs, summaries whose Through moves on, settings
// changes, and sometimes a last turn that did not end (no answer).
func generated(seed int64) []history.Message {
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
	var ends []int      // places a summary may end at: prompts and answers
	var results []place // results and inputs a record may clear
	var inputs []place
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
				inputs = append(inputs, place{len(msgs), id})
				p := history.Part{Type: history.ToolResultPart, CallID: id, Text: text(r.Intn(3000)), IsError: r.Intn(5) == 0}
				if r.Intn(6) == 0 {
					p.Images = []result.Image{{MIMEType: "image/png", Data: []byte("png")}}
				}
				res.Parts = append(res.Parts, p)
				results = append(results, place{len(msgs) + 1, id})
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

// same fails t unless got equals want, naming what and where.
func same(t *testing.T, what string, seed int64, from int, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d, tail from %d: %s over the tail is\n%+v\nover the whole list\n%+v", seed, from, what, got, want)
	}
}

func TestReadersOverATailAnswerAsOverTheWholeList(t *testing.T) {
	tails := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := generated(seed)
		least, _ := Least(stored)
		for from := 0; from <= least; from++ {
			tail, err := TailOf(stored, from)
			if err != nil {
				t.Fatalf("seed %d: a tail from %d (least %d) was refused: %v", seed, from, least, err)
			}
			tails++
			whole, g := Gather(stored), GatherTail(tail)
			same(t, "View", seed, from, g.View(), whole.View())
			for _, fixed := range []int{0, 3000} {
				same(t, "Measure", seed, from, g.Measure(fixed), whole.Measure(fixed))
				r, ok := tail.Ratio(fixed)
				wr, wok := Ratio(fixed, stored)
				same(t, "Ratio", seed, from, []any{r, ok}, []any{wr, wok})
				c := whole.Measure(fixed)
				for _, budget := range []int{c.Tokens/3 + 1, c.Tokens, 2*c.Tokens + 1} {
					for _, refused := range []int{0, budget + 7} {
						for _, p := range []Policy{{}, {KeepRounds: 1, MinInput: 100}} {
							same(t, "PlanFor", seed, from, p.PlanFor(budget, fixed, g, refused), p.PlanFor(budget, fixed, whole, refused))
						}
					}
					cut, err := Policy{}.CutFor(budget, fixed, g)
					wcut, werr := Policy{}.Cut(budget, fixed, stored)
					same(t, "CutFor", seed, from, fmt.Sprint(cut, err), fmt.Sprint(wcut, werr))
					if err == nil {
						same(t, "SummaryRequestFor", seed, from, SummaryRequestFor(g, cut, 100), SummaryRequest(stored, cut, 100))
					}
				}
			}
			for i := from; i < len(stored); i++ {
				for _, p := range stored[i].Parts {
					if g.ResultCleared(i, p.CallID) != whole.ResultCleared(i, p.CallID) {
						t.Fatalf("seed %d, tail from %d: ResultCleared(%d, %s) differs", seed, from, i, p.CallID)
					}
				}
			}
			same(t, "End", seed, from, g.End(), len(stored))
		}
	}
	if tails < 600 {
		t.Fatalf("only %d tails were compared: the generated conversations summarise too seldom to test tails", tails)
	}
}

func TestATailPastTheLeastFromIsRefusedSayingWhichReaderNeedsWhat(t *testing.T) {
	refused := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := generated(seed)
		least, why := Least(stored)
		if least >= len(stored) {
			continue
		}
		_, err := TailOf(stored, least+1)
		if err == nil {
			t.Fatalf("seed %d: a tail from %d, past the least from %d (%s), was not refused", seed, least+1, least, why)
		}
		if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), fmt.Sprint(least)) {
			t.Fatalf("seed %d: the refusal %q does not say %q nor the least from %d", seed, err, why, least)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("no generated conversation had a tail to refuse")
	}
	stored := generated(7)
	if _, err := TailOf(stored, len(stored)+1); err == nil {
		t.Fatal("a tail past the conversation's end was not refused")
	}
}

func TestATailPanicsForAPlaceBeforeItsFrom(t *testing.T) {
	stored := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "a"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "b"}}},
		{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 2, Text: "s"}}},
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "c"}}},
	}
	tail := NewTail(2, stored[2:], BeforeOf(stored, 2))
	if tail.At(3) != &stored[3] {
		t.Fatal("At(3) is not the stored message at place 3")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("At(1), before the tail's From 2, did not panic")
		}
	}()
	tail.At(1)
}
