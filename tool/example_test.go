package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/myelin-run/myelin/tool"
)

// A tool made from a typed function: its input schema is inferred from the
// struct, and the dispatcher decodes a call's arguments into it. What the
// function returns is the result; a struct becomes compact JSON.
func ExampleFunc() {
	type add struct {
		A int `json:"a" jsonschema:"the first number"`
		B int `json:"b" jsonschema:"the second number"`
	}
	sum, err := tool.Func("math--add", "Add two numbers.", func(ctx context.Context, in add) (any, error) {
		return map[string]int{"sum": in.A + in.B}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	schema, _ := json.Marshal(sum.InputSchema)
	fmt.Println(string(schema))

	tools := &tool.Registry{}
	if err := tools.Add(sum); err != nil {
		log.Fatal(err)
	}
	d := &tool.Dispatcher{Tools: tools}
	out := d.Call(context.Background(), tool.Call{ID: "call_1", Name: "math--add", Input: json.RawMessage(`{"a":2,"b":3}`)})
	fmt.Println(out.Text)
	// Output:
	// {"type":"object","properties":{"a":{"type":"integer","description":"the first number"},"b":{"type":"integer","description":"the second number"}},"required":["a","b"],"additionalProperties":false}
	// {"sum":5}
}

// A registry holds the tools an agent offers, in a stable order, each name
// once: adding a name twice is an error that names it.
func ExampleRegistry() {
	nop := func(name string) *tool.Tool {
		return tool.MustFunc(name, "Does nothing.", func(context.Context, struct{}) (any, error) { return "ok", nil })
	}
	tools := &tool.Registry{}
	if err := tools.Add(nop("notes--list"), nop("notes--add")); err != nil {
		log.Fatal(err)
	}
	fmt.Println(tools.Names())
	fmt.Println(tools.Get("notes--add").Description)
	fmt.Println(tools.Add(nop("notes--add")) != nil)
	// Output:
	// [notes--add notes--list]
	// Does nothing.
	// true
}

// A round of calls runs through the dispatcher: the outputs come back in
// the calls' order, and what went wrong — an error the tool returned, an
// input its schema refuses, a tool that does not exist — is an error
// result the model can act on, never a Go error.
func ExampleDispatcher_Round() {
	type lookup struct {
		Key string `json:"key"`
	}
	get := tool.MustFunc("kv--get", "Get a key's value.", func(ctx context.Context, in lookup) (any, error) {
		if in.Key != "color" {
			return nil, errors.New("no key " + in.Key)
		}
		return "blue", nil
	})
	tools := &tool.Registry{}
	if err := tools.Add(get); err != nil {
		log.Fatal(err)
	}
	d := &tool.Dispatcher{Tools: tools}
	outs := d.Round(context.Background(), []tool.Call{
		{ID: "c1", Name: "kv--get", Input: json.RawMessage(`{"key":"color"}`)},
		{ID: "c2", Name: "kv--get", Input: json.RawMessage(`{"key":"size"}`)},
		{ID: "c3", Name: "kv--get", Input: json.RawMessage(`{}`)},
		{ID: "c4", Name: "kv--set", Input: json.RawMessage(`{}`)},
	})
	for _, o := range outs {
		fmt.Printf("error=%v %s\n", o.IsError, o.Text)
	}
	// Output:
	// error=false blue
	// error=true no key size
	// error=true invalid input for kv--get: required: missing properties: ["key"]; kv--get takes key (string, required)
	// error=true there is no tool named "kv--set"; the tools are: kv--get
}
