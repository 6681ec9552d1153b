package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
)

// BenchmarkFork measures agent.Fork (the fork `myelin history fork`,
// `run --fork` and the API make: the store's Fork after the check that the
// point is not inside a round) side by side with the store's own
// Brancher.Fork, on SQLite, at the end of conversations of 1,000 and
// 10,000 messages, each cold: every fork is made through a store opened
// anew (not timed), which has read none of the conversation's messages,
// as a fresh `myelin history fork` has not. The two should cost about the
// same whatever the length (docs/performance.md, "Forking").
//
// Run:
//
//	go test ./agent -run '^$' -bench Fork -count 6
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "h.db")
	s, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	lengths := []int{1_000, 10_000}
	for _, n := range lengths {
		benchConversation(b, s, fmt.Sprint("long", n), n)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	made := 0 // the forks' ids: every run of a sub-benchmark (-count) makes new ones
	forks := map[string]func(s *sqlite.Store, base string, n int) error{
		"store": func(s *sqlite.Store, base string, n int) error {
			made++
			_, err := s.Fork(ctx, history.Conversation{ID: fmt.Sprint(base, "-fork", made), Base: base, BaseAt: n})
			return err
		},
		"agent": func(s *sqlite.Store, base string, _ int) error {
			_, err := Fork(ctx, s, base, -1)
			return err
		},
	}
	for _, n := range lengths {
		for _, by := range []string{"store", "agent"} {
			b.Run(fmt.Sprintf("%s-fork-of-%d", by, n), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					s, err := sqlite.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := forks[by](s, fmt.Sprint("long", n), n); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

// benchConversation stores conversation id of n messages, a prompt and
// an answer in turn, in batches.
func benchConversation(b *testing.B, s *sqlite.Store, id string, n int) {
	b.Helper()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: id, System: "be brief"}); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; {
		batch := make([]history.Message, 0, min(1000, n-done))
		for range cap(batch) {
			role := history.User
			if done%2 == 1 {
				role = history.Assistant
			}
			batch = append(batch, history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("message %d: a line of a long conversation", done)}}})
			done++
		}
		if err := s.Append(ctx, id, batch...); err != nil {
			b.Fatal(err)
		}
	}
}
