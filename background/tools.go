package background

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// The tools that show and stop background scripts.
const (
	ToolList   = "code_execution--list"
	ToolCancel = "code_execution--cancel"
)

// Tools are code_execution--list and code_execution--cancel over m.
// list only reads (tool.Tool.ReadOnly); cancel changes what runs.
func (m *Manager) Tools() []*tool.Tool {
	list := tool.MustFunc(ToolList, "List the background scripts of this conversation (code_execution with background: true): id, status, wakes so far, lifetime and journal.",
		func(ctx context.Context, _ struct{}) (any, error) {
			infos := m.List(tool.ConversationOf(ctx))
			return result.Result{Data: listText(infos), Structured: mustJSON(listReport{Scripts: orEmpty(infos)})}, nil
		})
	cancel := tool.MustFunc(ToolCancel, "Stop a background script of this conversation by its id. Wakes it has made that are still held are dropped.",
		func(ctx context.Context, in struct {
			ID string `json:"id" jsonschema:"the script's id, as code_execution returned it (bg_...)"`
		}) (any, error) {
			info, err := m.Cancel(tool.ConversationOf(ctx), in.ID)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("stopped background script %s; it had woken you %d times", info.ID, info.Wakes)
			if info.Dropped > 0 {
				text += fmt.Sprintf("; %d wakes it had made, held to keep the gap, were dropped", info.Dropped)
			}
			return result.Result{Data: text + ". Its journal: " + info.Journal, Structured: mustJSON(info)}, nil
		})
	list.ReadOnly = true // it shows, and changes nothing
	list.OutputSchema, cancel.OutputSchema = listSchema(), infoSchema()
	return []*tool.Tool{list, cancel}
}

// listReport is the shape of code_execution--list's structured content.
type listReport struct {
	Scripts []Info `json:"scripts" jsonschema:"the conversation's background scripts of this process, oldest first"`
}

// listSchema and infoSchema are the output schemas of
// code_execution--list and --cancel (tool.Tool.OutputSchema), what an
// MCP host checks their structured content against: inferred from the
// types the handlers encode, the list never null.
// TestListAndCancelResultsFitTheirOutputSchemas holds them to it.
func listSchema() *jsonschema.Schema {
	s := mustSchema[listReport]()
	s.Properties["scripts"].Type, s.Properties["scripts"].Types = "array", nil
	return s
}

func infoSchema() *jsonschema.Schema { return mustSchema[Info]() }

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("background: the output schema of %T: %v", *new(T), err)) // the types are this package's own
	}
	return s
}

func orEmpty(infos []Info) []Info {
	if infos == nil {
		return []Info{}
	}
	return infos
}

func mustJSON(v any) json.RawMessage {
	b, err := result.JSON(v)
	if err != nil {
		panic(err) // the values here are plain structs and maps
	}
	return b
}

// listText is the list as the model reads it: a line per script.
func listText(infos []Info) string {
	if len(infos) == 0 {
		return "no background scripts in this conversation"
	}
	var b strings.Builder
	for _, i := range infos {
		fmt.Fprintf(&b, "%s %s", i.ID, i.Status)
		if i.Status != "running" {
			fmt.Fprintf(&b, " (%s) at %s", i.Why, i.Ended)
		}
		fmt.Fprintf(&b, "; started %s, lifetime %s; woke you %d times", i.Started, i.Lifetime, i.Wakes)
		if i.Held > 0 {
			fmt.Fprintf(&b, ", %d held", i.Held)
		}
		fmt.Fprintf(&b, "; journal %s\n", i.Journal)
	}
	return b.String()
}
