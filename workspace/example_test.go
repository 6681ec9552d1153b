package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// A workspace gives the model its tools over one directory tree: here a
// write, a read of what it wrote, and a read that tries to leave the tree,
// each run as the agent runs a call (tool.Dispatcher), with the workspace
// as the store of spill files (result.Env).
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "workspace-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ws, err := workspace.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()

	tools := &tool.Registry{}
	if err := tools.Add(ws.Tools()...); err != nil {
		log.Fatal(err)
	}
	fmt.Println(tools.Names())
	d := &tool.Dispatcher{Tools: tools, Env: result.Env{Store: ws}}
	ctx := context.Background()
	for _, c := range []tool.Call{
		{ID: "c1", Name: "workspace--write", Input: json.RawMessage(`{"path":"notes/todo.txt","content":"water the plants\nfix the bike\n"}`)},
		{ID: "c2", Name: "workspace--read", Input: json.RawMessage(`{"path":"notes/todo.txt"}`)},
		{ID: "c3", Name: "workspace--read", Input: json.RawMessage(`{"path":"../secret.txt"}`)},
	} {
		out := d.Call(ctx, c)
		fmt.Printf("%s error=%v\n%s\n", c.Name, out.IsError, out.Text)
	}
	// Output:
	// [workspace--edit workspace--glob workspace--grep workspace--list workspace--read workspace--write]
	// workspace--write error=false
	// created notes/todo.txt: 30 characters, 2 lines
	// workspace--read error=false
	//      1	water the plants
	//      2	fix the bike
	// [lines 1-2 of 2 in notes/todo.txt; end of file]
	// workspace--read error=true
	// path "../secret.txt" contains ".."; paths must stay inside the workspace
}
