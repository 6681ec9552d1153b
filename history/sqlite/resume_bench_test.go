package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// BenchmarkReadAfterRestart reads a stored conversation of 100,000
// messages whole from a store just opened, as a restarted process's first
// Messages does (issue 34 point 4, docs/performance.md "Resuming a stored
// conversation"), side by side with its floors in the same run:
//
//   - step-floor: the same rows stepped on the store's connection, each
//     blob scanned as sql.RawBytes and not kept (SQLite's and the
//     driver's part alone);
//   - step-copy: the same, each blob copied (what the read keeps);
//   - messages: Store.Messages of a store just opened (stepped, checked,
//     decoded).
//
// Run:
//
//	go test ./history/sqlite -run '^$' -bench ReadAfterRestart -count 6
func BenchmarkReadAfterRestart(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "h.db")
	const n = 100000
	storeRounds(b, path, "c", n)
	fresh := func(b *testing.B) *Store {
		b.StopTimer()
		defer b.StartTimer()
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	step := func(b *testing.B, keep bool) {
		for b.Loop() {
			s := fresh(b)
			rows, err := s.selectNew.QueryContext(ctx, 0, "c")
			if err != nil {
				b.Fatal(err)
			}
			var kept [][]byte
			if keep {
				kept = make([][]byte, 0, n)
			}
			count := 0
			for rows.Next() {
				var raw sql.RawBytes
				var seq, crc sql.NullInt64
				if err := rows.Scan(&seq, &raw, &crc); err != nil {
					b.Fatal(err)
				}
				if keep {
					kept = append(kept, append([]byte(nil), raw...))
				}
				count++
			}
			if err := rows.Err(); err != nil || count != n {
				b.Fatal(count, err)
			}
			rows.Close()
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	}
	b.Run("get", func(b *testing.B) {
		s := fresh(b)
		defer s.Close()
		for b.Loop() {
			if _, err := s.Get(ctx, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("step-floor", func(b *testing.B) { step(b, false) })
	b.Run("step-copy", func(b *testing.B) { step(b, true) })
	b.Run("messages", func(b *testing.B) {
		for b.Loop() {
			s := fresh(b)
			msgs, err := s.Messages(ctx, "c")
			if err != nil || len(msgs) != n {
				b.Fatal(len(msgs), err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
}

// storeRounds makes conversation id in a new store at path: n messages,
// an answer with a tool call and its result over and over.
func storeRounds(b *testing.B, path, id string, n int) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
		b.Fatal(err)
	}
	var batch []history.Message
	for i := 0; i < n; i += 2 {
		batch = append(batch,
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Let me read the next file."},
				{Type: history.ToolCallPart, CallID: fmt.Sprintf("toolu_%d", i), Name: "workspace--read", Input: json.RawMessage(`{"path":"src/main.go"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: fmt.Sprintf("toolu_%d", i),
				Text: "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n[lines 1-3 of 3 in src/main.go; end of file]"}}})
		if len(batch) >= 1000 {
			if err := s.Append(ctx, id, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := s.Append(ctx, id, batch...); err != nil {
		b.Fatal(err)
	}
}
