package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// requests is e's store as history.Requests; it skips t for a store
// without them.
func (e *env) requests(t *testing.T, s history.Store) history.Requests {
	t.Helper()
	r, ok := s.(history.Requests)
	if !ok {
		t.Skip("the store keeps no requests")
	}
	return r
}

// RequestBodies are n of a conversation's request bodies as a wire sends them:
// each the one before with more appended and its last bytes changed (a
// moving cache marker), and now and then one that differs from its first
// byte (the settings changed).
func RequestBodies(n int) [][]byte {
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

func requestsByteForByte(t *testing.T, s Subject) {
	e := s.env(t)
	reqs := e.requests(t, e.s)
	bodies := RequestBodies(75)
	e.conversation("c")
	if n, err := reqs.RequestCount(e.ctx, "c"); err != nil || n != 0 {
		t.Fatalf("a new conversation has %d requests (%v)", n, err)
	}
	add := func(reqs history.Requests, from, to int) {
		for i := from; i < to; i++ {
			// the caller's bytes are its own again once AddRequest
			// returns (a wire writes its next body into them)
			body := bytes.Clone(bodies[i])
			n, err := reqs.AddRequest(e.ctx, "c", history.SentRequest{Msg: i, Wire: "anthropic", Body: body, Usage: &history.Usage{Input: i}})
			if err != nil || n != i+1 {
				t.Fatalf("request %d: numbered %d, %v", i+1, n, err)
			}
			for k := range body {
				body[k] = 'x'
			}
		}
	}
	add(reqs, 0, 40)
	// another opening knows no last body: it reads it back
	reqs = e.requests(t, e.open())
	add(reqs, 40, len(bodies))
	for i, want := range bodies {
		got, err := reqs.Request(e.ctx, "c", i+1)
		if err != nil || !bytes.Equal(got.Body, want) || got.N != i+1 || got.Msg != i || got.Usage == nil || got.Usage.Input != i || got.Wire != "anthropic" || got.Time.IsZero() {
			t.Fatalf("request %d: %v, %+v\n got %q\nwant %q", i+1, err, got, got.Body, want)
		}
	}
	if n, err := reqs.RequestCount(e.ctx, "c"); err != nil || n != len(bodies) {
		t.Fatalf("RequestCount = %d, %v", n, err)
	}
	list, err := reqs.RequestList(e.ctx, "c")
	if err != nil || len(list) != len(bodies) {
		t.Fatalf("RequestList: %d requests, %v", len(list), err)
	}
	for i, r := range list {
		if r.N != i+1 || r.Size != len(bodies[i]) || r.Body != nil || r.Msg != i || r.Usage == nil {
			t.Fatalf("listed request %d: %+v", i+1, r)
		}
	}
	for _, n := range []int{0, len(bodies) + 1} {
		if _, err := reqs.Request(e.ctx, "c", n); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("request %d: %v", n, err)
		}
	}
	if _, err := reqs.AddRequest(e.ctx, "nope", history.SentRequest{Body: []byte("x")}); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("a request of no conversation: %v", err)
	}
	if _, err := reqs.RequestList(e.ctx, "nope"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("the requests of no conversation: %v", err)
	}
}

// Bodies that do not grow by appending: the same body twice (an empty
// tail), a body that shrinks (a prefix of the one before), an empty body,
// and bodies across a snapshot boundary (requests 32 to 34 and 64, 65) —
// each given back byte for byte, also by another opening of the store
// that began just before, at and after the boundary.
func requestsShrinkRepeat(t *testing.T, s Subject) {
	e := s.env(t)
	store := e.requests(t, e.s)
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
	e.conversation("c")
	check := func(store history.Requests, upto int) {
		t.Helper()
		for i := range upto {
			got, err := store.Request(e.ctx, "c", i+1)
			if err != nil || !bytes.Equal(got.Body, bodies[i]) {
				t.Fatalf("request %d: %v\n got %q\nwant %q", i+1, err, got.Body, bodies[i])
			}
		}
	}
	for i, b := range bodies {
		if n, err := store.AddRequest(e.ctx, "c", history.SentRequest{Body: b}); err != nil || n != i+1 {
			t.Fatalf("request %d: numbered %d, %v", i+1, n, err)
		}
		if i == 31 || i == 32 || i == 33 {
			check(store, i+1)
			store = e.requests(t, e.open())
		}
	}
	check(store, len(bodies))
}

// Several conversations keep their requests at once, each its own, through
// two openings of the store.
func requestsConcurrent(t *testing.T, s Subject) {
	e := s.env(t)
	stores := []history.Requests{e.requests(t, e.s), e.requests(t, e.open())}
	const convs, reqs = 6, 30
	for c := range convs {
		e.conversation(fmt.Sprint("c", c))
	}
	body := func(c, i int) []byte {
		return fmt.Appendf(nil, `{"c":%d,"m":[%s]}`, c, bytes.Repeat(fmt.Appendf(nil, `"%d",`, c), i+1))
	}
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	for c := range convs {
		wg.Go(func() {
			for i := range reqs {
				store := stores[(c+i)%2]
				n, err := store.AddRequest(e.ctx, fmt.Sprint("c", c), history.SentRequest{Body: body(c, i)})
				if err != nil {
					errs <- fmt.Errorf("conversation %d request %d: %w", c, i+1, err)
					return
				}
				if n != i+1 {
					errs <- fmt.Errorf("conversation %d request %d: numbered %d", c, i+1, n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := range convs {
		for i := range reqs {
			got, err := stores[0].Request(e.ctx, fmt.Sprint("c", c), i+1)
			if err != nil || !bytes.Equal(got.Body, body(c, i)) {
				t.Fatalf("conversation %d request %d: %v\n got %q\nwant %q", c, i+1, err, got.Body, body(c, i))
			}
		}
	}
}

// KeepsRequestsByWhatTheyAdd checks a store that keeps a request by what
// it adds to the one before (history.Requests' delta): it makes
// conversation "c" in s, keeps 200 requests that grow by appending, and
// fails t unless the bytes the store says it kept for their bodies
// (keptBytes, read from the store's own tables) are under a fifth of
// theirs: a conversation's requests cost about what the conversation does.
func KeepsRequestsByWhatTheyAdd(t *testing.T, s history.Store, keptBytes func() int) {
	t.Helper()
	ctx := context.Background()
	reqs, ok := s.(history.Requests)
	if !ok {
		t.Fatal("the store keeps no requests")
	}
	if err := s.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, b := range RequestBodies(200) {
		total += len(b)
		if _, err := reqs.AddRequest(ctx, "c", history.SentRequest{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	if kept := keptBytes(); kept*5 > total {
		t.Fatalf("kept %d bytes of tails for %d bytes of bodies", kept, total)
	}
}
