package window

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/historytest"
)

// same fails t unless got equals want, naming what and where.
func same(t *testing.T, what string, seed int64, from int, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d, tail from %d: %s over the tail is\n%+v\nover the whole list\n%+v", seed, from, what, got, want)
	}
}

// Every reader of the window gives the same answer over a tail from any
// place up to Least as over the whole list, for generated conversations.
func TestReadersOverATailAnswerAsOverTheWholeList(t *testing.T) {
	tails := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := historytest.Generated(seed)
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

// A tail from past Least is refused, the error naming the reader that
// needs an earlier place and why.
func TestATailPastTheLeastFromIsRefusedSayingWhichReaderNeedsWhat(t *testing.T) {
	refused := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := historytest.Generated(seed)
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
	stored := historytest.Generated(7)
	if _, err := TailOf(stored, len(stored)+1); err == nil {
		t.Fatal("a tail past the conversation's end was not refused")
	}
}

// A reader cannot reach before a tail's From: At panics for such a place.
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
