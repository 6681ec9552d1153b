package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// requestBodies are a conversation's request bodies as a wire sends them:
// each the one before with more appended and its last bytes changed (a
// moving cache marker), and now and then one that differs from its first
// byte (the settings changed).
func requestBodies(n int) [][]byte {
	var out [][]byte
	body := []byte(`{"messages":[`)
	for i := range n {
		body = append(body[:max(len(body)-20, 13)], fmt.Sprintf(`{"role":"user","content":"round %d"},`, i)...)
		b := append([]byte(nil), body...)
		b = append(b, fmt.Sprintf(`],"marker":%d}`, i)...)
		if i%17 == 16 {
			b[0] = '[' // differs from the first byte
		}
		out = append(out, b)
	}
	return out
}

func TestEveryStoreGivesBackEachRequestByteForByte(t *testing.T) {
	ctx := context.Background()
	bodies := requestBodies(75)
	path := filepath.Join(t.TempDir(), "h.db")
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			var store Store
			if kind == "memory" {
				store = &Memory{}
			} else {
				s, err := OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { s.Close() }()
				store = s
			}
			reqs := store.(Requests)
			if err := store.Create(ctx, Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			if n, err := reqs.RequestCount(ctx, "c"); err != nil || n != 0 {
				t.Fatalf("a new conversation has %d requests (%v)", n, err)
			}
			add := func(from, to int) {
				for i := from; i < to; i++ {
					n, err := reqs.AddRequest(ctx, "c", SentRequest{Msg: i, Wire: "anthropic", Body: bodies[i], Usage: &Usage{Input: i}})
					if err != nil || n != i+1 {
						t.Fatalf("request %d: numbered %d, %v", i+1, n, err)
					}
				}
			}
			add(0, 40)
			if kind == "sqlite" {
				// a store opened again knows no last body: it reads it back
				store.Close()
				s, err := OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				store, reqs = s, s
				defer func() { s.Close() }()
			}
			add(40, len(bodies))
			for i, want := range bodies {
				got, err := reqs.Request(ctx, "c", i+1)
				if err != nil || !bytes.Equal(got.Body, want) || got.N != i+1 || got.Msg != i || got.Usage == nil || got.Usage.Input != i || got.Wire != "anthropic" {
					t.Fatalf("request %d: %v, %+v\n got %q\nwant %q", i+1, err, got, got.Body, want)
				}
			}
			list, err := reqs.RequestList(ctx, "c")
			if err != nil || len(list) != len(bodies) {
				t.Fatalf("RequestList: %d requests, %v", len(list), err)
			}
			for i, r := range list {
				if r.N != i+1 || r.Size != len(bodies[i]) || r.Body != nil || r.Msg != i || r.Usage == nil {
					t.Fatalf("listed request %d: %+v", i+1, r)
				}
			}
			for _, n := range []int{0, len(bodies) + 1} {
				if _, err := reqs.Request(ctx, "c", n); !errors.Is(err, ErrNotFound) {
					t.Fatalf("request %d: %v", n, err)
				}
			}
			if _, err := reqs.AddRequest(ctx, "nope", SentRequest{Body: []byte("x")}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a request of no conversation: %v", err)
			}
		})
	}
}

// The store keeps what a request adds, not the whole of it: a
// conversation's requests cost about what the conversation does.
func TestTheSQLiteStoreKeepsARequestByWhatItAdds(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, b := range requestBodies(200) {
		total += len(b)
		if _, err := s.AddRequest(ctx, "c", SentRequest{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	var kept int
	if err := s.db.QueryRow(`SELECT SUM(LENGTH(tail)) FROM requests`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept*5 > total {
		t.Fatalf("kept %d bytes of tails for %d bytes of bodies", kept, total)
	}
}
