package history

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// Bodies that do not grow by appending: the same body twice (an empty
// tail), a body that shrinks (a prefix of the one before), one that is a
// prefix-extension again, an empty body, and a body across the snapshot
// boundary (requests 32, 33, 34 and 64, 65) — each given back byte for
// byte, before and after the store is opened again, and by every store.
func TestRequestsThatShrinkRepeatOrCrossASnapshotAreGivenBackWhole(t *testing.T) {
	ctx := context.Background()
	var bodies [][]byte
	base := []byte(`{"messages":[{"role":"user","content":"hello"}`)
	for i := range 70 {
		var b []byte
		switch {
		case i%7 == 1:
			b = bytes.Clone(bodies[i-1]) // the same again
		case i%7 == 2:
			b = bytes.Clone(bodies[i-1][:len(bodies[i-1])/2]) // shrinks
		case i == 40:
			b = []byte{} // empty
		default:
			base = append(base, fmt.Sprintf(`,{"n":%d}`, i)...)
			b = append(bytes.Clone(base), `]}`...)
		}
		bodies = append(bodies, b)
	}
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.db")
			open := func() Store {
				if kind == "memory" {
					return &Memory{}
				}
				s, err := OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			store := open()
			if err := store.Create(ctx, Conversation{ID: "c"}); err != nil {
				t.Fatal(err)
			}
			check := func(store Store, upto int) {
				t.Helper()
				for i := range upto {
					got, err := store.(Requests).Request(ctx, "c", i+1)
					if err != nil || !bytes.Equal(got.Body, bodies[i]) {
						t.Fatalf("request %d: %v\n got %q\nwant %q", i+1, err, got.Body, bodies[i])
					}
				}
			}
			for i, b := range bodies {
				if n, err := store.(Requests).AddRequest(ctx, "c", SentRequest{Body: b}); err != nil || n != i+1 {
					t.Fatalf("request %d: numbered %d, %v", i+1, n, err)
				}
				if kind == "sqlite" && (i == 31 || i == 32 || i == 33) {
					// opened again just before, at and after a snapshot
					check(store, i+1)
					store.Close()
					store = open()
				}
			}
			check(store, len(bodies))
		})
	}
}

// Several conversations keep their requests at once, each its own.
func TestConcurrentConversationsKeepTheirOwnRequests(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const convs, reqs = 6, 40
	for c := range convs {
		if err := s.Create(ctx, Conversation{ID: fmt.Sprint("c", c)}); err != nil {
			t.Fatal(err)
		}
	}
	body := func(c, i int) []byte {
		return []byte(fmt.Sprintf(`{"c":%d,"m":[%s]}`, c, bytes.Repeat([]byte(fmt.Sprintf(`"%d",`, c)), i+1)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	for c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range reqs {
				if n, err := s.AddRequest(ctx, fmt.Sprint("c", c), SentRequest{Body: body(c, i)}); err != nil || n != i+1 {
					errs <- fmt.Errorf("conversation %d request %d: numbered %d, %v", c, i+1, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := range convs {
		for i := range reqs {
			got, err := s.Request(ctx, fmt.Sprint("c", c), i+1)
			if err != nil || !bytes.Equal(got.Body, body(c, i)) {
				t.Fatalf("conversation %d request %d: %v\n got %q\nwant %q", c, i+1, err, got.Body, body(c, i))
			}
		}
	}
}

// The SQLite store remembers the newest request body of a bounded number
// of conversations (to keep the next by what it adds without reading the
// last back): a server that runs many conversations must not hold the last
// body of each of them for as long as it runs. The ones it forgot are read
// back, and every body is still given back whole.
func TestTheSQLiteStoreRemembersTheLastBodyOfABoundedNumberOfConversations(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const convs = sentBodiesKept * 3
	body := func(c, i int) []byte {
		return []byte(fmt.Sprintf(`{"c":%d,"m":[%s]}`, c, bytes.Repeat([]byte(`"x",`), i+1)))
	}
	for i := range 3 {
		for c := range convs {
			id := fmt.Sprint("c", c)
			if i == 0 {
				if err := s.Create(ctx, Conversation{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.AddRequest(ctx, id, SentRequest{Body: body(c, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.sent.mu.Lock()
	n := len(s.sent.bodies)
	s.sent.mu.Unlock()
	if n > sentBodiesKept {
		t.Fatalf("the store remembers the last body of %d conversations; want at most %d", n, sentBodiesKept)
	}
	for c := range convs {
		for i := range 3 {
			got, err := s.Request(ctx, fmt.Sprint("c", c), i+1)
			if err != nil || !bytes.Equal(got.Body, body(c, i)) {
				t.Fatalf("conversation %d request %d: %v %q", c, i+1, err, got.Body)
			}
		}
	}
}
