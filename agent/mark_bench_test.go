package agent

// What a running agent's read of a conversation costs per request (fit's
// load, its gather, keepMark) with the mark the store keeps and without
// (a store that keeps none: every read whole, as before marks), side by
// side (issue 34 point 4; written by the review of slice 2). Run:
//
//	go test ./agent -run '^$' -bench MarkedRead -benchtime 300x -count 3

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/window"
)

// markedConversation is n stored messages: a prompt, rounds of a call and
// its result (each answer counting its request), a record clearing ten
// results every 100 rounds, and a summary through place through stored
// once the rounds pass it; then more rounds.
func markedConversation(n, through int) []history.Message {
	return markedConversationSummaries(n, []int{through}, "summary")
}

// markedConversationSummaries is markedConversation with a summary through
// each of throughs, each of text text.
func markedConversationSummaries(n int, throughs []int, text string) []history.Message {
	msgs := []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	next := 0
	for i := 0; len(msgs) < n; i += 2 {
		r := roundOf(i)
		r[0].Usage = &history.Usage{Input: 1000 + i, Output: 10}
		msgs = append(msgs, r...)
		if i%40 == 38 { // an answer and a new prompt every 20 rounds
			msgs = append(msgs, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}, Usage: &history.Usage{Input: 1000 + i, Output: 5}},
				history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go on"}}})
		}
		if i%200 == 0 && i > 0 {
			e := &history.Edit{Why: "bench"}
			for k := 0; k < 10; k++ {
				at := len(msgs) - 1 - 2*k*5
				if at > 0 && msgs[at].Role == history.User && msgs[at].HoldsResults() {
					e.Cleared = append(e.Cleared, history.Cleared{Msg: at, CallID: msgs[at].Parts[0].CallID, Text: "[cleared]", Chars: 10})
				}
			}
			msgs = append(msgs, history.Message{Role: history.Context, Edit: e})
		}
		if next < len(throughs) && len(msgs) > throughs[next]+2 {
			msgs = append(msgs, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: throughs[next], Text: text}}})
			next++
		}
	}
	return msgs
}

func BenchmarkMarkedRead(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ n, through int }{{10000, 9000}, {10000, 1000}, {100000, 99000}} {
		stored := markedConversation(c.n, c.through)
		whole := wholeState(stored)
		from := markFrom(&whole, window.GatherTail(whole.tail))
		facts, _ := json.Marshal(whole.factsAt(from))
		mk := markOf(from, facts)
		mem := &history.Memory{}
		if err := mem.Create(ctx, history.Conversation{ID: "c"}); err != nil {
			b.Fatal(err)
		}
		if err := mem.Append(ctx, "c", stored...); err != nil {
			b.Fatal(err)
		}
		if err := mem.SetMark(ctx, "c", mk); err != nil {
			b.Fatal(err)
		}
		on := func(Event) {}
		name := fmt.Sprintf("%dk-tail%dk", c.n/1000, (c.n-from)/1000)
		for _, s := range []struct {
			name  string
			store history.Store
		}{{"whole", unmarked{mem}}, {"marked", mem}} {
			a := &Agent{Store: s.store}
			b.Run(name+"/"+s.name, func(b *testing.B) {
				for b.Loop() {
					st, g, err := a.load(ctx, "c", false)
					if err != nil {
						b.Fatal(err)
					}
					if g == nil {
						g = window.GatherTail(st.tail)
					}
					a.keepMark(ctx, "c", &st, g, nil, false, on)
					_ = g.Measure(100)
				}
			})
		}
		tail := stored[from:]
		b.Run(name+"/markedState-alone", func(b *testing.B) {
			for b.Loop() {
				if _, _, ok := (&Agent{}).markedState("c", mk, tail); !ok {
					b.Fatal("mark not used")
				}
			}
		})
	}
}

// BenchmarkPackedRead is a turn's read of a long conversation nothing
// summarised (10k and 100k messages), its view packed with its mark at
// its end (pack.go), on Memory: by a running agent, which keeps the pack
// unpacked (running), by a fresh one, which unpacks it (fresh), and read
// whole from the store's memory (whole: the floor a running agent had
// before packs), each gathered for the window as fit gathers it. Run:
//
//	go test ./agent -run '^$' -bench PackedRead -benchtime 20x -count 3
func BenchmarkPackedRead(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10000, 100000} {
		stored := markedConversation(n, n+10) // no summary
		mem := &history.Memory{}
		if err := mem.Create(ctx, history.Conversation{ID: "c"}); err != nil {
			b.Fatal(err)
		}
		if err := mem.Append(ctx, "c", stored...); err != nil {
			b.Fatal(err)
		}
		packer := &Agent{Store: mem}
		st, g, err := packer.load(ctx, "c", false)
		if err != nil {
			b.Fatal(err)
		}
		packer.keepMark(ctx, "c", &st, g, nil, true, func(Event) {})
		n := len(stored) // about n: the rounds are whole
		if m, _, _ := mem.Marked(ctx, "c"); m.From != n {
			b.Fatalf("the view of %d messages was not packed (mark at %d)", n, m.From)
		}
		read := func(b *testing.B, a *Agent) {
			st, g, err := a.load(ctx, "c", false)
			if err != nil || st.end() != n {
				b.Fatalf("read %d messages (%v)", st.end(), err)
			}
			if g == nil {
				g = window.GatherTail(st.tail) // as fit does
			}
		}
		name := fmt.Sprintf("%dk", n/1000)
		b.Run(name+"/whole", func(b *testing.B) {
			a := &Agent{Store: unmarked{mem}}
			for b.Loop() {
				read(b, a)
			}
		})
		b.Run(name+"/running", func(b *testing.B) {
			for b.Loop() {
				read(b, packer)
			}
		})
		b.Run(name+"/fresh", func(b *testing.B) {
			for b.Loop() {
				read(b, &Agent{Store: mem})
			}
		})
	}
}
