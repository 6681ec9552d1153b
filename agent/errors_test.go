package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// A turn stopped by its context's cancellation fails with an error that is
// context.Canceled, wherever the cancel finds it: before the turn claims
// the conversation, while it waits for another writer's claim, and (the
// tests of agent_test.go) while an answer streams or a round's tools run.
func TestACancelledTurnFailsWithContextCanceled(t *testing.T) {
	// Before the turn: on SQLite and on history.Memory, whose claims both
	// refuse a cancelled context.
	for _, store := range []string{"sqlite", "memory"} {
		t.Run("before the turn, on "+store, func(t *testing.T) {
			r := newRigOn(t, store, "anthropic")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := r.agent.Turn(ctx, r.id, "hello", nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v (%T) is not context.Canceled", err, err)
			}
		})
	}
	t.Run("while it waits for another writer's claim", func(t *testing.T) {
		r := newRig(t)
		r.agent.Wait = true
		if _, err := r.agent.Store.Claim(context.Background(), r.id, history.NewHolder(), time.Minute); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err := r.agent.Turn(ctx, r.id, "hello", func(e Event) {
			if e.Kind == Waiting {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v (%T) is not context.Canceled", err, err)
		}
	})
}

// A turn cancelled once it has claimed the conversation and said it
// started keeps its prompt, on every store alike: what it reads and the
// prompt are read and stored whatever the context says; the cancel ends it
// at its next step (here fitting its first request, so no answer is cut). (SQLite lost the prompt in this race,
// and Memory since it heeds its context too; the server's test of a cancel
// right after turn.started failed now and then in CI.)
func TestATurnCancelledAsItStartsKeepsItsPrompt(t *testing.T) {
	for _, store := range []string{"sqlite", "memory"} {
		t.Run(store, func(t *testing.T) {
			r := newRigOn(t, store, "anthropic")
			ctx, cancel := context.WithCancel(context.Background())
			_, err := r.agent.Turn(ctx, r.id, "wait for me", func(e Event) {
				if e.Kind == Started {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v (%T) is not context.Canceled", err, err)
			}
			msgs, err := r.agent.Store.Messages(context.Background(), r.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				t.Fatal("nothing stored: the prompt of a turn that started was lost")
			}
			if msgs[0].Role != history.User || msgs[0].Parts[0].Text != "wait for me" {
				t.Errorf("first stored message %+v, want the prompt", msgs[0])
			}
		})
	}
}

// A tool whose input schema cannot be encoded fails the tool definitions
// with an error naming the tool and keeping the encoder's.
func TestAToolSchemaThatCannotBeEncodedKeepsItsCause(t *testing.T) {
	bad := &tool.Tool{Name: "bad", Description: "Has a default that is no JSON.",
		InputSchema: &jsonschema.Schema{Type: "object", Default: json.RawMessage(`{`)}}
	_, err := encodeDefs([]*tool.Tool{bad})
	var encoding *json.MarshalerError
	if !errors.As(err, &encoding) {
		t.Fatalf("error %v (%T) does not keep the encoder's *json.MarshalerError", err, err)
	}
}

// A file a shared store does not keep is, to the workspace that asked for
// it, a file that does not exist, and still the store's ErrNotFound.
func TestAFileTheSharedStoreLacksIsNotExistAndNotFound(t *testing.T) {
	store := &history.Memory{ShareBlobs: true}
	ctx := context.Background()
	if err := store.Create(ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := fetchFrom(store, "c")(ctx, "missing.txt")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
	if !errors.Is(err, history.ErrNotFound) {
		t.Errorf("error %v does not keep the store's history.ErrNotFound", err)
	}
}

// A conversation that does not fit its window, its summary request having
// failed, fails the turn with an error that says so and keeps the
// provider's error beneath it.
func TestATurnThatCannotFitKeepsWhyTheSummaryFailed(t *testing.T) {
	r := newRig(t)
	r.agent.ContextWindow, r.agent.MaxTokens = 12000, 1000
	r.srv.Cache = true // usage worked out: the estimate is calibrated
	for range 3 {
		r.srv.Push(providertest.Step{Text: "hi"})
		if _, err := r.agent.Turn(context.Background(), r.id, strings.Repeat("some words ", 300), nil); err != nil {
			t.Fatal(err)
		}
	}
	r.srv.Push(providertest.Step{Status: 400, ErrorMessage: "no summary today"})
	_, err := r.agent.Turn(context.Background(), r.id, strings.Repeat("many words ", 6000), nil)
	if err == nil || !strings.Contains(err.Error(), "does not fit its window") {
		t.Fatalf("error %v; want the conversation's not fitting its window", err)
	}
	var wire *provider.WireError
	if !errors.As(err, &wire) || !strings.Contains(wire.Msg, "no summary today") {
		t.Fatalf("error %v (%T) does not keep the summary request's *provider.WireError", err, err)
	}
}

// newRigOn is newWireRig on store: "sqlite" (the rig's own) or "memory"
// (a history.Memory holding the rig's conversation).
func newRigOn(t *testing.T, store, wire string) *rig {
	t.Helper()
	r := newWireRig(t, wire)
	if store == "memory" {
		r.agent.Store = &history.Memory{}
		if err := r.agent.OpenConversation(context.Background(), r.id); err != nil {
			t.Fatal(err)
		}
	}
	return r
}
