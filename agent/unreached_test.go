package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/gemini"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/provider/responses"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// deletingStore is a Memory store that can delete a conversation
// (history.Deleter), as the history.Deleter contract says: refused while
// its claim is held, ErrNotFound once gone.
type deletingStore struct {
	*history.Memory
	mu      sync.Mutex
	held    map[string]int
	deleted map[string]bool
	deletes int
}

func newDeletingStore() *deletingStore {
	return &deletingStore{Memory: &history.Memory{}, held: map[string]int{}, deleted: map[string]bool{}}
}

func (s *deletingStore) Claim(ctx context.Context, id string, h history.Holder, lease time.Duration) (history.Holder, error) {
	got, err := s.Memory.Claim(ctx, id, h, lease)
	if err == nil {
		s.mu.Lock()
		s.held[id]++
		s.mu.Unlock()
	}
	return got, err
}

func (s *deletingStore) Release(ctx context.Context, id string, h history.Holder) error {
	s.mu.Lock()
	s.held[id]--
	s.mu.Unlock()
	return s.Memory.Release(ctx, id, h)
}

func (s *deletingStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes++
	if s.held[id] > 0 {
		return &history.HeldError{Conversation: id}
	}
	if s.deleted[id] {
		return history.ErrNotFound
	}
	s.deleted[id] = true
	return nil
}

func (s *deletingStore) List(ctx context.Context) ([]history.Conversation, error) {
	all, err := s.Memory.List(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Conversation
	for _, c := range all {
		if !s.deleted[c.ID] {
			out = append(out, c)
		}
	}
	return out, err
}

// unreachedAgent is an agent of wire at url that drops what never
// reached the provider, on store.
func unreachedAgent(t *testing.T, mk func(string) (provider.Provider, error), url string, store history.Store) *Agent {
	t.Helper()
	p, err := mk(url)
	if err != nil {
		t.Fatal(err)
	}
	return &Agent{Provider: p, Store: store, Tools: &tool.Registry{}, Env: result.Env{}, Model: "claude-test", DropUnreached: true}
}

func TestANewConversationWhoseFirstRequestNeverReachedTheProviderIsNotKept(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			addr := providertest.ClosedAddr(t)
			store := newDeletingStore()
			a := unreachedAgent(t, testWires[wire].provider, "http://"+addr, store)
			a.Model = testWires[wire].model
			id, err := a.NewConversation(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tr, err := a.Turn(context.Background(), id, "hi", nil)
			if err == nil {
				t.Fatal("a turn against a closed port succeeded")
			}
			if !strings.Contains(err.Error(), "could not reach http://"+addr+"/") || !strings.HasSuffix(err.Error(), "connection refused by "+addr) {
				t.Errorf("the error should name the URL and say the connection was refused: %q", err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) || !provider.NeverReached(err) {
				t.Errorf("errors.Is(ECONNREFUSED) and NeverReached should hold through %q", err)
			}
			if !tr.Dropped {
				t.Error("the turn should say the conversation was dropped")
			}
			if list, _ := store.List(context.Background()); len(list) != 0 {
				t.Errorf("nothing should be listed, got %d conversations", len(list))
			}
		})
	}
}

func TestAConversationWithTurnsKeepsThemAndTheCutAnswerWhenTheProviderCannotBeReached(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	store := newDeletingStore()
	a := unreachedAgent(t, testWires["anthropic"].provider, "http://"+addr, store)
	id, err := a.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "earlier"}}},
		{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "an answer"}}},
	}
	if err := store.Append(context.Background(), id, before...); err != nil {
		t.Fatal(err)
	}
	tr, err := a.Turn(context.Background(), id, "hi", nil)
	if err == nil || tr.Dropped || store.deletes != 0 {
		t.Fatalf("the turn should fail without deleting anything: err %v, dropped %v, %d deletes", err, tr.Dropped, store.deletes)
	}
	msgs, _ := store.Messages(context.Background(), id)
	if len(msgs) != 4 {
		t.Fatalf("%d messages stored, want the history and the cut answer (4): %+v", len(msgs), msgs)
	}
	must(t, fmt.Sprintf("last message %+v", msgs[3]),
		want{msgs[3].Cut, "the answer marked cut"},
		want{textOf(msgs[3]) == NoTextMarker, "its text NoTextMarker"})
}

func TestAFirstRequestThatReachedTheProviderIsKeptAsACutAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 16))
			_ = c.Close() // accepted, read, hung up: the request may have been had
		}
	}()
	store := newDeletingStore()
	a := unreachedAgent(t, testWires["anthropic"].provider, "http://"+l.Addr().String(), store)
	id, err := a.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := a.Turn(context.Background(), id, "hi", nil)
	if err == nil || tr.Dropped || provider.NeverReached(err) {
		t.Fatalf("want a failed turn that reached the server, not dropped: err %v, dropped %v", err, tr.Dropped)
	}
	msgs, _ := store.Messages(context.Background(), id)
	if len(msgs) != 2 || !msgs[1].Cut {
		t.Fatalf("the prompt and a cut answer should be stored, got %d messages", len(msgs))
	}
}

func TestAStoreThatCannotDeleteKeepsTheConversationAsBefore(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	store := struct{ history.Store }{&history.Memory{}} // the Store's methods only: no Delete
	a := unreachedAgent(t, testWires["anthropic"].provider, "http://"+addr, store)
	id, err := a.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := a.Turn(context.Background(), id, "hi", nil)
	if err == nil || tr.Dropped {
		t.Fatalf("want a failed turn, not dropped: err %v, dropped %v", err, tr.Dropped)
	}
	if msgs, _ := store.Messages(context.Background(), id); len(msgs) != 2 || !msgs[1].Cut {
		t.Fatalf("the prompt and a cut answer should be stored, got %d messages", len(msgs))
	}
}

func TestEachRetryOfARequestIsAnEventThatSaysWhy(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	store := newDeletingStore()
	mk := func(url string) (provider.Provider, error) {
		return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: 2, RetryDelay: time.Millisecond})
	}
	a := unreachedAgent(t, mk, "http://"+addr, store)
	a.Model = "gemini-test"
	id, err := a.NewConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var retries []string
	_, err = a.Turn(context.Background(), id, "hi", func(e Event) {
		if e.Kind == Retry {
			retries = append(retries, e.Text)
		}
	})
	want := []string{
		"retrying gemini request (attempt 2 of 3) in 1ms: connection refused by " + addr,
		"retrying gemini request (attempt 3 of 3) in 2ms: connection refused by " + addr,
	}
	if strings.Join(retries, "\n") != strings.Join(want, "\n") {
		t.Errorf("retry events:\n%s\nwant:\n%s", strings.Join(retries, "\n"), strings.Join(want, "\n"))
	}
	if err == nil || !strings.HasPrefix(err.Error(), "gemini: could not reach http://"+addr+"/v1beta/models/gemini-test:streamGenerateContent after 3 attempts: connection refused") {
		t.Errorf("the error should name the URL (no query), the attempts and the cause: %v", err)
	}
}

func TestAWholeAnswerTheSDKSendsNamesTheURLAndTheCauseToo(t *testing.T) {
	addr := providertest.ClosedAddr(t)
	for wire, mk := range map[string]func(string) (provider.Provider, error){
		"anthropic": func(url string) (provider.Provider, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: true})
		},
		"openai": func(url string) (provider.Provider, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: true})
		},
		"openai-responses": func(url string) (provider.Provider, error) {
			return responses.New(responses.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: true})
		},
		"gemini": func(url string) (provider.Provider, error) {
			return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: true})
		},
	} {
		t.Run(wire, func(t *testing.T) {
			store := newDeletingStore()
			a := unreachedAgent(t, mk, "http://"+addr+"/?key=SECRET", store)
			id, err := a.NewConversation(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tr, err := a.Turn(context.Background(), id, "hi", nil)
			if err == nil || !strings.HasPrefix(err.Error(), wire+": could not reach http://"+addr+"/") || !strings.HasSuffix(err.Error(), ": connection refused by "+addr) {
				t.Errorf("the error should name the wire, the URL and the cause: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows the URL's query: %v", err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) || !tr.Dropped {
				t.Errorf("errors.Is(ECONNREFUSED) should hold and the conversation be dropped: dropped %v, %v", tr.Dropped, err)
			}
		})
	}
}
