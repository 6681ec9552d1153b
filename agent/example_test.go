package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// A Go program embeds myelin: a provider, a store, a workspace and its own
// tools make an agent; a turn streams events as they happen.
func Example() {
	// A scripted model stands in for the real one here; a program uses
	// anthropic.New(anthropic.Config{}), which reads ANTHROPIC_API_KEY.
	model := providertest.NewAnthropic(nil,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "weather--lookup", Input: `{"city":"Oslo"}`}}},
		providertest.Step{Text: "It is sunny in Oslo."})
	defer model.Close()
	prov, err := anthropic.New(anthropic.Config{APIKey: "example", BaseURL: model.URL})
	if err != nil {
		log.Fatal(err)
	}

	dir, _ := os.MkdirTemp("", "myelin-example-")
	defer os.RemoveAll(dir)
	ws, err := workspace.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	type lookup struct {
		City string `json:"city" jsonschema:"the city"`
	}
	weather := tool.MustFunc("weather--lookup", "Look up the weather in a city.",
		func(ctx context.Context, in lookup) (any, error) { return "sunny, 21 °C in " + in.City, nil })
	tools := &tool.Registry{}
	if err := tools.Add(append(ws.Tools(), weather)...); err != nil {
		log.Fatal(err)
	}

	a := &agent.Agent{Provider: prov, Store: store, Tools: tools, Env: result.Env{Store: ws}, Model: "claude-sonnet-4-5"}
	ctx := context.Background()
	id, err := a.NewConversation(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := a.Turn(ctx, id, "What is the weather in Oslo?", func(e agent.Event) {
		if e.Kind == agent.ToolResult {
			fmt.Printf("%s → %s\n", e.Call.Name, e.Output.Text)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Text)
	// Output:
	// weather--lookup → sunny, 21 °C in Oslo
	// It is sunny in Oslo.
}

// Turns of one conversation follow each other: each sends what the store
// holds, so the second turn's request carries the first turn's exchange.
// history.Memory keeps the conversation in memory; an agent needs no
// workspace when its tools write no files.
func ExampleAgent_Turn() {
	model := providertest.NewAnthropic(nil,
		providertest.Step{Text: "Noted: your name is Ada."},
		providertest.Step{Text: "Your name is Ada."})
	defer model.Close()
	prov, err := anthropic.New(anthropic.Config{APIKey: "example", BaseURL: model.URL})
	if err != nil {
		log.Fatal(err)
	}
	store := &history.Memory{}
	a := &agent.Agent{Provider: prov, Store: store, Tools: &tool.Registry{}, Model: "claude-sonnet-4-5"}
	ctx := context.Background()
	id, err := a.NewConversation(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, prompt := range []string{"My name is Ada.", "What is my name?"} {
		tr, err := a.Turn(ctx, id, prompt, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s (%s)\n", tr.Text, tr.Reason)
	}
	msgs, err := store.Messages(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(msgs), "messages stored;", len(model.Request(1)["messages"].([]any)), "sent with the second prompt")
	// Output:
	// Noted: your name is Ada. (end_turn)
	// Your name is Ada. (end_turn)
	// 4 messages stored; 3 sent with the second prompt
}

// An agent's Gate checks every call before it runs; each result's event
// carries the record of what was decided, which is stored with the
// result. Here the policy denies deleting, so the call does not run and
// the model reads why.
func ExampleAgent_gate() {
	model := providertest.NewAnthropic(nil,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "notes--delete", Input: `{}`}}},
		providertest.Step{Text: "I may not delete notes."})
	defer model.Close()
	prov, err := anthropic.New(anthropic.Config{APIKey: "example", BaseURL: model.URL})
	if err != nil {
		log.Fatal(err)
	}
	deleteNotes := tool.MustFunc("notes--delete", "Delete every note.", func(context.Context, struct{}) (any, error) {
		return "deleted", nil
	})
	tools := &tool.Registry{}
	if err := tools.Add(deleteNotes); err != nil {
		log.Fatal(err)
	}
	deny, err := permission.ParseRule("notes--delete", permission.Deny, "example")
	if err != nil {
		log.Fatal(err)
	}
	a := &agent.Agent{Provider: prov, Store: &history.Memory{}, Tools: tools, Model: "claude-sonnet-4-5",
		Gate: &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{deny}}}}
	ctx := context.Background()
	id, err := a.NewConversation(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := a.Turn(ctx, id, "Delete my notes.", func(e agent.Event) {
		if e.Kind == agent.ToolResult {
			fmt.Printf("%s: %s by %s\n%s\n", e.Call.Name, e.Permission.Decision, e.Permission.By, e.Output.Text)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Text)
	// Output:
	// notes--delete: deny by rule
	// the call of notes--delete was denied by the permission policy and did not run: denied by notes--delete (example)
	// I may not delete notes.
}
