package agent

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/historytest"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/window"
)

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
		stored := historytest.Generated(seed)
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
		stored := historytest.Generated(seed)
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
	stored := historytest.Generated(3)
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
