package window

import (
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// session is n rounds of an answer with usage and a result of about 4,000
// bytes, as issue 11's long sessions have.
func session(n int) []history.Message {
	msgs := []history.Message{text(history.User, 200)}
	for i := range n {
		msgs = append(msgs, answer(150, history.Usage{Input: 10, CacheRead: 1000 * (i + 1)}), text(history.User, 4000))
	}
	return msgs
}

// BenchmarkMeasure sizes the next request of a 1,000-round conversation.
func BenchmarkMeasure(b *testing.B) {
	msgs := session(1000)
	b.ReportAllocs()
	for b.Loop() {
		Measure(5000, msgs)
	}
}

// BenchmarkMeasureFloor is the floor Measure is compared with: reading each
// part's text length once, which any count of the request must do.
func BenchmarkMeasureFloor(b *testing.B) {
	msgs := session(1000)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, m := range msgs {
			for _, p := range m.Parts {
				n += len(p.Text)
			}
		}
		if n == 0 {
			b.Fatal("empty session")
		}
	}
}

// BenchmarkPlan is what a turn does before each request of a 1,000-round
// conversation of tool rounds that has had 20 clearing edits: gather its
// records once (Gather), measure it across the edits and plan (under the
// high mark: nothing to take out, the common case), then build the
// request's messages (View).
func BenchmarkPlan(b *testing.B) {
	stored := toolSession(5000, 1000, 4000)
	for i := range 20 {
		var ids []string
		for j := range 40 {
			ids = append(ids, fmt.Sprintf("call_%d", i*40+j))
		}
		stored = append(stored, cleared(ids...))
	}
	b.ReportAllocs()
	for b.Loop() {
		g := Gather(stored)
		if p := (Policy{}).PlanFor(1<<30, 5000, g, 0); len(p.Clear) > 0 {
			b.Fatal("planned a clearing")
		}
		g.View()
	}
}
