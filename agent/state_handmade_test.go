package agent

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// Hand-made conversations the generator does not make (a summary whose
// Through moves back, a record without an edit, settings on a user message
// and on a record before From, a clearing stored before From of a place
// after it, a continued turn whose prompt precedes the latest summary),
// each read from every From up to leastFrom, compared with the whole
// list.
func TestATurnsReadersOverAHandMadeTailAnswerAsOverTheWholeList(t *testing.T) {
	tx := func(s string) []history.Part { return []history.Part{{Type: history.TextPart, Text: s}} }
	call := func(id string, n int) []history.Part {
		return []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "tool", Input: []byte(fmt.Sprintf(`{"x":"%0*d"}`, n, 0))}}
	}
	res := func(id string, n int) []history.Part {
		return []history.Part{{Type: history.ToolResultPart, CallID: id, Text: fmt.Sprintf("%0*d", n, 0)}}
	}
	u := func(in int) *history.Usage { return &history.Usage{Input: in, Output: 3} }
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	set := &history.Settings{Model: "model-9", System: "old"}
	cases := map[string][]history.Message{
		// a summary whose Through moves back (stored after one further on)
		"through back": {
			{Role: history.User, Parts: tx("p1")},
			{Role: history.Assistant, Parts: call("c1", 3000), Usage: u(900), Time: clock},
			{Role: history.User, Parts: res("c1", 3000)},
			{Role: history.Assistant, Parts: tx("a1"), Usage: u(1900), Time: clock},
			{Role: history.User, Parts: tx("p2")},
			{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 4, Text: "S4"}}},
			{Role: history.Assistant, Parts: call("c2", 3000), Usage: u(500), Time: clock},
			{Role: history.User, Parts: res("c2", 3000)},
			{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 2, Text: "S2"}}},
			{Role: history.Assistant, Parts: tx("a2"), Usage: u(1500), Time: clock},
		},
		// a record without Edit, settings on a user message and on a record,
		// a clearing stored before From of a place after it
		"odd records": {
			{Role: history.User, Parts: tx("p1"), Settings: set},
			{Role: history.Assistant, Parts: call("c1", 3000), Usage: u(900), Time: clock},
			{Role: history.User, Parts: res("c1", 3000)},
			{Role: history.Context},
			{Role: history.Context, Settings: &history.Settings{Model: "model-8"}, Edit: &history.Edit{Cleared: []history.Cleared{{Msg: 9, CallID: "c2", Text: "[ahead]"}}}},
			{Role: history.Assistant, Parts: tx("a1"), Usage: u(1900), Time: clock},
			{Role: history.User, Parts: tx("p2")},
			{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "S5"}}},
			{Role: history.Assistant, Parts: call("c2", 3000), Usage: u(700), Time: clock},
			{Role: history.User, Parts: res("c2", 3000)},
		},
		// a continued turn whose prompt precedes the latest summary
		"prompt before summary": {
			{Role: history.User, Parts: tx("p1")},
			{Role: history.Assistant, Parts: tx("a1"), Usage: u(100), Time: clock},
			{Role: history.User, Parts: tx("p2")},
			{Role: history.Assistant, Parts: call("c1", 5000), Usage: u(900), Time: clock},
			{Role: history.User, Parts: res("c1", 5000)},
			{Role: history.Assistant, Parts: call("c2", 5000), Usage: u(2900), Time: clock},
			{Role: history.User, Parts: res("c2", 5000)},
			{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "S5"}}},
			{Role: history.Assistant, Parts: call("c3", 5000), Usage: u(1200), Time: clock},
			{Role: history.User, Parts: res("c3", 5000)},
		},
	}
	for name, stored := range cases {
		a := &Agent{Model: "model-0"}
		now := a.settings(sizing{conv: history.Conversation{System: "system"}, digest: "tools"})
		for _, dollars := range []bool{false, true} {
			whole := wholeState(stored)
			want := startOf(t, &whole, now, dollars)
			least, why := leastFrom(stored, dollars)
			t.Logf("%s dollars %v: least %d (%s)", name, dollars, least, why)
			for from := 0; from <= least; from++ {
				st, err := stateOf(stored, from, dollars)
				if err != nil {
					t.Fatalf("%s: from %d refused: %v", name, from, err)
				}
				got := startOf(t, &st, now, dollars)
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("%s, dollars %v, from %d: answer %d\n tail  %+v\n whole %+v", name, dollars, from, i, got[i], want[i])
					}
				}
			}
		}
	}
}
