package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/history"
)

// countingStore counts the store's Get calls (each poll of a subscribed
// conversation makes one).
type countingStore struct {
	history.Memory
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, id string) (history.Conversation, error) {
	c.gets.Add(1)
	return c.Memory.Get(ctx, id)
}

// A subscription to what names no resource of myelin's — a conversation
// the store does not have, a file outside the workspace, a file URI with
// a query, another scheme, a URI past MaxSubscribedURI — is refused
// saying why, and nothing of it is polled.
func TestASubscriptionToNoResourceIsRefused(t *testing.T) {
	ws := openWorkspace(t)
	st := &countingStore{}
	if err := st.Create(context.Background(), history.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Workspace: ws, Store: st, Poll: 5 * time.Millisecond})
	cs := connectAt(t, s, nil, hostVersion)
	ctx := context.Background()
	for uri, why := range map[string]string{
		"myelin://conversations/nope":              "no conversation",
		"file:///etc/passwd":                       "not under the workspace",
		fileURI(ws.Dir(), "a.txt") + "?pad=" + "p": "no query",
		"test://watched-resource":                  "names no resource",
		fileURI(ws.Dir(), "a.txt") + "?" + strings.Repeat("p", MaxSubscribedURI): "bytes long",
	} {
		err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("subscribing to %.60s gave %v, want it refused saying %q", uri, err, why)
		}
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fileURI(ws.Dir(), "not-yet.txt")}); err != nil {
		t.Errorf("a subscription to a workspace file that is not there yet (its appearing is a change) was refused: %v", err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "myelin://conversations/c1"}); err != nil {
		t.Errorf("a subscription to a stored conversation was refused: %v", err)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if len(s.subs.by) != 2 {
		t.Errorf("%d URIs are subscribed to, want the 2 that name resources", len(s.subs.by))
	}
}

// One session subscribes to at most MaxSubscriptions resources: the next
// is refused naming the bound, and one more is taken once it
// unsubscribes from one. Subscribing again to the same URI counts once.
func TestASessionsSubscriptionsAreBounded(t *testing.T) {
	ws := openWorkspace(t)
	s := New(Config{Workspace: ws, Poll: time.Hour})
	cs := connectAt(t, s, nil, hostVersion)
	ctx := context.Background()
	uri := func(i int) string { return fileURI(ws.Dir(), fmt.Sprintf("f%d.txt", i)) }
	for i := range MaxSubscriptions {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(i)}); err != nil {
			t.Fatalf("subscription %d was refused: %v", i, err)
		}
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(0)}); err != nil {
		t.Errorf("subscribing again to a URI subscribed to was refused: %v", err)
	}
	err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(MaxSubscriptions)})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxSubscriptions)) {
		t.Fatalf("subscription %d gave %v, want it refused naming the bound", MaxSubscriptions+1, err)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri(1)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(MaxSubscriptions)}); err != nil {
		t.Errorf("after an unsubscription, a subscription was refused: %v", err)
	}
}

// A poll reads each conversation once however many URIs (pages of it)
// are subscribed to: its cost follows the resources, not the
// subscriptions.
func TestAPollReadsAConversationOnceForAllItsURIs(t *testing.T) {
	st := &countingStore{}
	if err := st.Create(context.Background(), history.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Store: st, Poll: 20 * time.Millisecond})
	cs := connectAt(t, s, nil, hostVersion)
	ctx := context.Background()
	const pages = 200
	for i := range pages {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fmt.Sprintf("myelin://conversations/c1?from=%d", i)}); err != nil {
			t.Fatalf("subscription %d was refused: %v", i, err)
		}
	}
	before := st.gets.Load()
	time.Sleep(500 * time.Millisecond) // at most 25 polls
	if got := st.gets.Load() - before; got > 100 {
		t.Errorf("%d store reads in 0.5 s of polls every 20 ms of %d URIs of one conversation, want one a poll", got, pages)
	}
}
