package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/myelin-run/myelin/history"
)

// A conversation is kept in a Store: created with its system prompt, its
// messages appended in order — the prompt, an answer that calls a tool,
// the call's result, the final answer — and read back as they were
// stored. history.Memory is the Store that keeps them in memory; an
// unknown conversation is history.ErrNotFound in every Store.
func ExampleMemory() {
	ctx := context.Background()
	store := &history.Memory{}
	if err := store.Create(ctx, history.Conversation{ID: "conv-1", System: "You are terse."}); err != nil {
		log.Fatal(err)
	}
	err := store.Append(ctx, "conv-1",
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "What is in todo.txt?"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_1", Name: "workspace--read", Input: json.RawMessage(`{"path":"todo.txt"}`)}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "call_1", Text: "water the plants"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "Water the plants."}}},
	)
	if err != nil {
		log.Fatal(err)
	}

	msgs, err := store.Messages(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p.Type {
			case history.ToolCallPart:
				fmt.Printf("%s calls %s %s\n", m.Role, p.Name, p.Input)
			case history.ToolResultPart:
				fmt.Printf("%s gives %s's result: %s\n", m.Role, p.CallID, p.Text)
			default:
				fmt.Printf("%s: %s\n", m.Role, p.Text)
			}
		}
	}

	_, err = store.Messages(ctx, "conv-2")
	fmt.Println(errors.Is(err, history.ErrNotFound))
	// Output:
	// user: What is in todo.txt?
	// assistant calls workspace--read {"path":"todo.txt"}
	// user gives call_1's result: water the plants
	// assistant: Water the plants.
	// true
}
