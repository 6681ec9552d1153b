package agent

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/window"
)

// spot is a call's result or input in a generated conversation: its
// stored message and call id.
type spot struct {
	msg    int
	callID string
}

// This generator is window's (window/tail_test.go), copied: test files
// are not shared between packages.

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

// anyPricer prices every model alike: $1 a million input tokens, $5 a
// million output tokens, cache reads a tenth, cache writes 1.25.
type anyPricer struct{}

func (anyPricer) Cost(model string, u history.Usage) price.Cost {
	d := float64(u.Input)*1 + float64(u.CacheWrite)*1.25 + float64(u.CacheRead)*0.1 + float64(u.Output)*5
	return price.Cost{Dollars: d / 1e6, Known: true}
}

// budgetOf is what of b a reader decides: b without its pricer and
// subagents' tally (pointers, not what was read).
func budgetOf(b budget) budget {
	b.pricer, b.sub = nil, nil
	return b
}

// startOf is what a turn's start and fit read of st, for comparing one
// readState with another: recovery's last message, a continued turn's
// result, the budgets (with and without a cost budget), the settings
// checked, whether the turn may drop the conversation, the request, the
// clearing of what the plan takes out, and a summary's message count.
func startOf(t *testing.T, st *readState, now history.Settings, dollars bool) []any {
	t.Helper()
	a := &Agent{Model: "model-0", DropUnreached: true, Store: &history.Memory{}}
	if dollars {
		a.Pricer, a.MaxCost, a.MaxConversationCost = anyPricer{}, 1, 1000
	}
	var out []any
	last, ok := st.lastMessage()
	tr, ended := continuingOf(st, 3)
	out = append(out, last, ok, tr, ended)
	clock := time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)
	b, err := a.newBudget(st, tr.Usage, clock)
	out = append(out, budgetOf(b), fmt.Sprint(err))
	s := sizing{conv: history.Conversation{System: "system"}, digest: now.Tools, budget: 20000, fixed: 500}
	var said []string
	got := a.checkSettings(s, st, func(e Event) { said = append(said, e.Text) })
	prompt := "hello"
	out = append(out, got, said, a.droppable(&prompt, st, s.conv), st.end())
	g := window.GatherTail(st.tail)
	out = append(out, a.request(s, g))
	for _, budget := range []int{2000, 20000} {
		plan := a.Context.PlanFor(budget, s.fixed, g, 0)
		edit, err := a.clear(nil, plan, g.Tail(), true)
		out = append(out, plan, edit, fmt.Sprint(err))
		if through, err := a.Context.CutFor(budget, s.fixed, g); err == nil {
			out = append(out, through, st.messagesBefore(through), window.SummaryRequestFor(g, through, 100))
		}
	}
	return out
}

func TestATurnsReadersOverATailAnswerAsOverTheWholeList(t *testing.T) {
	tails, later := 0, 0
	for seed := int64(1); seed <= 200; seed++ {
		stored := generated(seed)
		a := &Agent{Model: "model-0"}
		now := a.settings(sizing{conv: history.Conversation{System: "system"}, digest: "tools"})
		r := rand.New(rand.NewSource(-seed))
		for i := range stored {
			if stored[i].Settings != nil && r.Intn(2) == 0 {
				stored[i].Settings = &now // the settings in force: checkSettings stores none
			}
		}
		for _, dollars := range []bool{false, true} {
			whole := wholeState(stored)
			want := startOf(t, &whole, now, dollars)
			least, _ := leastFrom(stored, dollars)
			for from := 0; from <= least; from++ {
				st, err := stateOf(stored, from, dollars)
				if err != nil {
					t.Fatalf("seed %d: reading from %d (least %d) was refused: %v", seed, from, least, err)
				}
				tails++
				if from > 0 {
					later++
				}
				if got := startOf(t, &st, now, dollars); !reflect.DeepEqual(got, want) {
					for i := range got {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("seed %d, dollars %v, from %d: reader answer %d over the tail is\n%+v\nover the whole list\n%+v", seed, dollars, from, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	if later < 200 {
		t.Fatalf("only %d of %d readings were of a tail past place 0: the generated conversations do not test tails", later, tails)
	}
}

func TestReadingPastTheLeastFromIsRefusedSayingWhichReaderNeedsWhat(t *testing.T) {
	refused := map[string]int{}
	for seed := int64(1); seed <= 200; seed++ {
		stored := generated(seed)
		for _, dollars := range []bool{false, true} {
			least, why := leastFrom(stored, dollars)
			if least >= len(stored) {
				continue
			}
			_, err := stateOf(stored, least+1, dollars)
			if err == nil || !strings.Contains(err.Error(), why) {
				t.Fatalf("seed %d, dollars %v: reading from %d, past the least %d (%s): %v", seed, dollars, least+1, least, why, err)
			}
			refused[strings.SplitN(why, ",", 2)[0]]++
		}
	}
	for _, reader := range []string{"a cost budget prices every stored answer", "a continued turn and the turn's budget read from the last prompt"} {
		if refused[reader] == 0 {
			t.Errorf("no generated conversation was refused for %q (refusals: %v)", reader, refused)
		}
	}
}

func TestACostBudgetOverAConversationReadFromALaterPlaceFails(t *testing.T) {
	stored := generated(3)
	least, _ := window.Least(stored)
	if least == 0 {
		t.Skip("seed 3 has no tail to read")
	}
	tail, err := window.TailOf(stored, least)
	if err != nil {
		t.Fatal(err)
	}
	st := readState{tail: tail}
	a := &Agent{Model: "model-0", Pricer: anyPricer{}, MaxConversationCost: 10}
	if _, err := a.newBudget(&st, history.Usage{}, time.Now()); err == nil || !strings.Contains(err.Error(), "prices every stored answer") {
		t.Fatalf("err %v, want one saying a cost budget reads every answer", err)
	}
}

// A conversation whose only answer with usage counted no request (and so
// does not bound the window's readers) stands before the view: the
// budgets' last cached usage bounds the tail.
func TestTheLastAnswerWithUsageBoundsTheTail(t *testing.T) {
	text := func(s string) []history.Part { return []history.Part{{Type: history.TextPart, Text: s}} }
	stored := []history.Message{
		{Role: history.User, Parts: text("one")},
		{Role: history.Assistant, Parts: text("two"), Usage: &history.Usage{Output: 5}},
		{Role: history.User, Parts: text("three")},
		{Role: history.Assistant, Parts: text("four")},
		{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 2, Text: "one, two"}}},
		{Role: history.User, Parts: text("five")},
	}
	least, why := leastFrom(stored, false)
	if least != 1 || !strings.Contains(why, "the last answer with usage") {
		t.Fatalf("least from %d (%s); want 1, for the last answer with usage", least, why)
	}
	whole := wholeState(stored)
	st, err := stateOf(stored, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	if got, want := fmt.Sprint(lastCachedOf(&st.tail, "", clock)), fmt.Sprint(lastCachedOf(&whole.tail, "", clock)); got != want {
		t.Fatalf("last cached usage over the tail %s, over the whole list %s", got, want)
	}
	if _, err := stateOf(stored, 2, false); err == nil || !strings.Contains(err.Error(), "the last answer with usage") {
		t.Fatalf("reading from 2: %v; want a refusal naming the last answer with usage", err)
	}
}
