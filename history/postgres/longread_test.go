package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// A long conversation's read, whose rows are decoded by decoders on every
// core as they are fetched, reports a gap or a damaged row in any batch
// as the short read does, whole or a range of it, by a store just opened
// and by one that had read the conversation before more was appended,
// and leaves no decoder running.
func TestALongReadReportsAGapOrADamagedRowAndLeavesNoDecoderRunning(t *testing.T) {
	const n = 3*256 + 10
	const (
		takeOut = `DELETE FROM messages WHERE seq = $1`
		moveOut = `UPDATE messages SET seq = seq + 10000 WHERE seq = $1` // the count kept: no Get's check finds it
		change  = `UPDATE messages SET message = convert_to(replace(convert_from(message, 'UTF8'), 'line', 'lime'), 'UTF8') WHERE seq = $1`
	)
	type damage struct {
		sql string
		seq int
	}
	for _, tc := range []struct {
		name   string
		damage []damage
		want   string
	}{
		{"a row taken out", []damage{{takeOut, 300}}, "message 300 is missing"},
		{"a row moved away", []damage{{moveOut, 300}}, "message 300 is missing"},
		{"a byte of a row changed", []damage{{change, 600}}, "message 600 is damaged"},
		{"a row changed before a gap: the first in row order", []damage{{change, 300}, {moveOut, 600}}, "message 300 is damaged"},
		{"the last row taken out", []damage{{takeOut, n}}, fmt.Sprintf("messages %d to %d are missing", n, n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			open, name := opener(t, nil)
			s := open()
			if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			msgs := make([]history.Message, n)
			for i := range msgs {
				msgs[i] = storetest.UserText(fmt.Sprintf("line %d of a long conversation", i+1))
			}
			if err := s.Append(ctx, "c", msgs[:100]...); err != nil {
				t.Fatal(err)
			}
			reader := open()
			if got, err := reader.Messages(ctx, "c"); err != nil || len(got) != 100 {
				t.Fatalf("the first read: %d messages, %v", len(got), err)
			}
			if err := s.Append(ctx, "c", msgs[100:]...); err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.damage {
				exec(t, name, d.sql, d.seq)
			}
			whole, ranged := open(), open()
			for what, read := range map[string]func() ([]history.Message, error){
				"a store just opened":             func() ([]history.Message, error) { return whole.Messages(ctx, "c") },
				"a store that had read 100":       func() ([]history.Message, error) { return reader.Messages(ctx, "c") },
				"a range, by a store just opened": func() ([]history.Message, error) { return ranged.MessagesBetween(ctx, "c", 1, n) },
			} {
				got, err := read()
				// a store just opened may find a row taken out by its count
				// first (Get), before it reads a row
				counted := fmt.Sprintf("holds %d messages, but %d were stored", n-1, n)
				if !errors.Is(err, history.ErrDamaged) || !strings.Contains(err.Error(), tc.want) && !(tc.damage[0].sql == takeOut && strings.Contains(err.Error(), counted)) {
					t.Errorf("%s read %d messages: %v; want ErrDamaged saying %q", what, len(got), err, tc.want)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				buf := make([]byte, 1<<20)
				stacks := string(buf[:runtime.Stack(buf, true)])
				if !strings.Contains(stacks, "rowdecode") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a decoder still runs after the reads:\n%s", stacks)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
