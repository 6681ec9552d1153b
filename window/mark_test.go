package window

import (
	"testing"

	"github.com/myelin-run/myelin/history/historytest"
)

// A tail's Least is the whole list's, from any From up to it: what the
// agent keeps as a mark is what Least would say, without reading what
// precedes the tail.
func TestATailsLeastIsTheWholeListsFromAnyFromUpToIt(t *testing.T) {
	later := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := historytest.Generated(seed)
		least, _ := Least(stored)
		for from := 0; from <= least; from++ {
			tail, err := TailOf(stored, from)
			if err != nil {
				t.Fatal(err)
			}
			if got := GatherTail(tail).Least(); got != least {
				t.Fatalf("seed %d: a tail from %d says Least %d; the whole list %d", seed, from, got, least)
			}
			if from > 0 {
				later++
			}
		}
	}
	if later < 300 {
		t.Fatalf("only %d tails past place 0: the generated conversations do not test tails", later)
	}
}

// Least never falls as messages are added: a From it allowed over a
// conversation stays one it allows after any later message, so a mark
// kept at it stays true through Appends.
func TestLeastNeverFallsAsMessagesAreAdded(t *testing.T) {
	rose := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := historytest.Generated(seed)
		prev := 0
		for n := 0; n <= len(stored); n++ {
			least, why := Least(stored[:n])
			if least < prev {
				t.Fatalf("seed %d: Least of the first %d messages is %d (%s), below the %d of fewer", seed, n, least, why, prev)
			}
			if least > prev {
				rose++
			}
			prev = least
		}
	}
	if rose < 100 {
		t.Fatalf("Least rose only %d times over the generated conversations: they do not test it", rose)
	}
}

// The facts BeforeAt gives of a later place, from a tail that starts
// earlier, make a Tail there that every reader reads as the whole list.
func TestATailMadeFromAnotherTailsFactsReadsAsTheWholeList(t *testing.T) {
	made := 0
	for seed := int64(1); seed <= 300; seed++ {
		stored := historytest.Generated(seed)
		least, _ := Least(stored)
		whole := Gather(stored)
		for from := 0; from <= least; from += 1 + from/3 {
			tail, err := TailOf(stored, from)
			if err != nil {
				t.Fatal(err)
			}
			for at := from; at <= least; at++ {
				b := tail.BeforeAt(at)
				want := BeforeOf(stored, at)
				same(t, "BeforeAt's summary", seed, at, b.Summary, want.Summary)
				same(t, "BeforeAt's records", seed, at, []bool{b.Records, b.Edited}, []bool{want.Records, want.Edited})
				g := GatherTail(NewTail(at, stored[at:], b))
				same(t, "View", seed, at, g.View(), whole.View())
				same(t, "Measure", seed, at, g.Measure(100), whole.Measure(100))
				for i := at; i < len(stored); i++ {
					for _, p := range stored[i].Parts {
						if g.ResultCleared(i, p.CallID) != whole.ResultCleared(i, p.CallID) {
							t.Fatalf("seed %d, facts at %d from a tail at %d: ResultCleared(%d, %s) differs", seed, at, from, i, p.CallID)
						}
					}
				}
				made++
			}
		}
	}
	if made < 600 {
		t.Fatalf("only %d tails made from another's facts", made)
	}
}
