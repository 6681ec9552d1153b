package sqlite

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// chunkStarts is where conversation id's resume chunks begin, in order.
func chunkStarts(t *testing.T, s *Store, id string) []int {
	t.Helper()
	rows, err := s.db.Query(`SELECT start FROM resume_chunks WHERE conversation = ? ORDER BY start`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// A resume point is read back as it was kept, after the store is opened
// again; the next point, which extends it, is kept by what it adds (one
// new chunk, the first left as it is), and a point that differs from its
// start is written again whole.
func TestAResumePointIsKeptByWhatItAddsAndReadBackWhole(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResumeOf(ctx, "c"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("a store that never kept a point: ResumeOf gave %v, want ErrNotFound", err)
	}
	first := history.ResumePoint{Wire: "w", Rows: 4, Messages: 3, Last: history.Assistant, Digest: "d1", Bytes: []byte(`{"messages":[{"role":"user"}`)}
	if err := s.KeepResume(ctx, "c", first); err != nil {
		t.Fatal(err)
	}
	next := first
	next.Rows, next.Messages, next.Digest = 6, 5, "d2"
	next.Bytes = append(append([]byte(nil), first.Bytes...), `,{"role":"assistant"}`...)
	if err := s.KeepResume(ctx, "c", next); err != nil {
		t.Fatal(err)
	}
	if got := chunkStarts(t, s, "c"); len(got) != 2 || got[0] != 0 || got[1] != len(first.Bytes) {
		t.Fatalf("the point that extends the one before is kept in chunks starting at %v, want [0 %d]", got, len(first.Bytes))
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ResumeOf(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes, next.Bytes) || got.Rows != 6 || got.Messages != 5 || got.Digest != "d2" || got.Wire != "w" || got.Last != history.Assistant {
		t.Fatalf("read back %+v (bytes %s), want %+v (bytes %s)", got, got.Bytes, next, next.Bytes)
	}
	other := next
	other.Bytes = []byte(`{"messages":[{"role":"assistant"},{"role":"user"}`)
	if err := s.KeepResume(ctx, "c", other); err != nil {
		t.Fatal(err)
	}
	if got := chunkStarts(t, s, "c"); len(got) != 1 || got[0] != 0 {
		t.Fatalf("a point that differs from its first byte is kept in chunks starting at %v, want [0]", got)
	}
	if got, err := s.ResumeOf(ctx, "c"); err != nil || !bytes.Equal(got.Bytes, other.Bytes) {
		t.Fatalf("read back %s (%v), want %s", got.Bytes, err, other.Bytes)
	}
}

// A point whose bytes do not read back as kept (a chunk damaged, or one
// missing) is not found: the agent takes the slow path.
func TestADamagedResumePointIsNotFound(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{
		`UPDATE resume_chunks SET bytes = CAST('{"messages":[{"role":"user"}' AS BLOB) WHERE start = 0`,
		`DELETE FROM resume_chunks WHERE start > 0`,
		`UPDATE resume_chunks SET start = start + 1 WHERE start > 0`,
	} {
		s, err := Open(filepath.Join(t.TempDir(), "h.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
			t.Fatal(err)
		}
		p := history.ResumePoint{Wire: "w", Rows: 2, Messages: 1, Bytes: []byte(`{"messages":[{"role":"USER"}`)}
		if err := s.KeepResume(ctx, "c", p); err != nil {
			t.Fatal(err)
		}
		p.Bytes = append(p.Bytes, `,{"role":"assistant"}`...)
		if err := s.KeepResume(ctx, "c", p); err != nil {
			t.Fatal(err)
		}
		if err := execSQL(s, damage); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ResumeOf(ctx, "c"); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("after %s: ResumeOf gave %s (%v), want ErrNotFound", damage, got.Bytes, err)
		}
		s.Close()
	}
}

// Deleting a conversation deletes its resume point.
func TestDeletingAConversationDeletesItsResumePoint(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepResume(ctx, "c", history.ResumePoint{Wire: "w", Rows: 1, Messages: 1, Bytes: []byte(`{"messages":[`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT (SELECT COUNT(*) FROM resume_points) + (SELECT COUNT(*) FROM resume_chunks)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the delete %d rows of its resume point are left (%v)", n, err)
	}
}
