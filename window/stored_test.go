package window

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// One Gather serves a request's Measure, Plan and View, in any order and
// more than once, and gives what each gives alone; Measure's two sizes are
// those of the request the last usage counted (the edits stored before
// it) and of the request now (all the edits), whatever records stand
// after that usage.
func TestOneGatherServesMeasurePlanAndViewAlike(t *testing.T) {
	base := toolSession(400, 10, 4000)
	withUsage := func(msgs []history.Message) []history.Message {
		b, _ := size(msgs, len(msgs))
		return append(msgs, history.Message{Role: history.Assistant, Usage: &history.Usage{Input: (400 + b) / 4}, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}})
	}
	clone := func(m []history.Message) []history.Message { return append([]history.Message{}, m...) }
	summary := history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "SUMMARY"}}}
	for _, tc := range []struct {
		name   string
		stored []history.Message
	}{
		{"no records", base},
		{"no usage yet", toolSession(400, 3, 100)[:1]},
		{"a record after the last usage", append(clone(base), cleared("call_0", "call_1"))},
		{"a record before the last usage", withUsage(append(clone(base), cleared("call_0")))},
		{"records before and after it", append(withUsage(append(clone(base), cleared("call_0"))), cleared("call_1"))},
		{"a record with no edit", append(clone(base), history.Message{Role: history.Context})},
		{"a summary after it", append(clone(base), summary)},
		{"a summary before it", withUsage(append(clone(base), summary))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.stored)
			budget := 2000 // over the high mark: the plan takes results out
			g := Gather(tc.stored)
			for range 2 {
				c := g.Measure(400)
				if k := lastCounted(tc.stored); k >= 0 {
					then, _ := size(tc.stored, k)
					now, _ := size(tc.stored, len(tc.stored))
					if c.NewBytes != now-then {
						t.Errorf("Measure's new bytes %d; want %d (now %d less then %d)", c.NewBytes, now-then, now, then)
					}
				}
				if alone := Measure(400, tc.stored); c != alone {
					t.Errorf("Measure of a Gather %+v; alone %+v", c, alone)
				}
				if p, alone := (Policy{}).PlanFor(budget, 400, g, 0), (Policy{}).Plan(budget, 400, tc.stored, 0); !reflect.DeepEqual(p, alone) {
					t.Errorf("PlanFor %+v; Plan %+v", p, alone)
				}
				if v, alone := g.View(), viewTo(tc.stored, len(tc.stored)); !reflect.DeepEqual(v, alone) {
					t.Errorf("View of a Gather differs from View alone")
				}
			}
			if fmt.Sprint(tc.stored) != before {
				t.Error("the stored messages changed")
			}
		})
	}
}

// A conversation without records is sent as it is stored: View does not
// copy it (a long conversation's next request would copy every message),
// and an append to what it returns does not write into the stored array.
func TestTheViewOfAConversationWithoutRecordsIsNotACopy(t *testing.T) {
	stored := make([]history.Message, 0, 100)
	stored = append(stored, toolSession(0, 3, 100)...)
	v := View(stored)
	if len(v) != len(stored) || &v[0] != &stored[0] {
		t.Fatalf("View of %d messages without records made a copy", len(stored))
	}
	if cap(v) != len(v) {
		t.Fatalf("View's capacity %d is past its length %d: an append would write into the stored array", cap(v), len(v))
	}
	v = append(v, history.Message{Role: history.User})
	if full := stored[:len(stored)+1]; full[len(stored)].Role != "" {
		t.Fatal("an append to the view wrote into the stored array")
	}
	withRecord := append(stored, cleared("call_0"))
	if v := View(withRecord); len(v) != len(withRecord)-1 || &v[0] == &withRecord[0] {
		t.Fatalf("View of a conversation with a record: %d messages, shared %v; want the record left out, in a copy", len(v), &v[0] == &withRecord[0])
	}
}

// Measure, the count before every request, allocates nothing for a
// conversation without records: its Stored stays on the stack (records'
// edits need their maps).
func TestMeasureAllocatesNothing(t *testing.T) {
	stored := toolSession(400, 50, 100)
	if n := testing.AllocsPerRun(20, func() { Measure(400, stored) }); n != 0 {
		t.Fatalf("Measure allocated %v times a call; want 0", n)
	}
}

// ResultCleared names the results a record takes out of requests: by
// stored message and call id, an input cleared (not its result) aside.
func TestResultClearedNamesTheResultsRecordsTakeOut(t *testing.T) {
	stored := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "a", Name: "t", Input: json.RawMessage(`{}`)}, {Type: history.ToolCallPart, CallID: "b", Name: "t", Input: json.RawMessage(`{}`)}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "a", Text: "A"}, {Type: history.ToolResultPart, CallID: "b", Text: "B"}}},
		{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{
			{Msg: 2, CallID: "a", Text: "[cleared a]"},
			{Msg: 1, CallID: "b", Input: true, Text: `{"cleared":true}`},
		}}},
	}
	s := Gather(stored)
	for _, tc := range []struct {
		msg    int
		callID string
		want   bool
	}{
		{2, "a", true},
		{2, "b", false}, // only its input is cleared, at message 1
		{1, "b", false},
		{3, "a", false},
	} {
		if got := s.ResultCleared(tc.msg, tc.callID); got != tc.want {
			t.Errorf("ResultCleared(%d, %q) = %v, want %v", tc.msg, tc.callID, got, tc.want)
		}
	}
}
