package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history/sqlite"
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
