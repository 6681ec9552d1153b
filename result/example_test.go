package result_test

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/myelin-run/myelin/result"
)

// The one conversion turns what a tool returned into the text the model
// reads: a string is itself, any other value compact JSON with its keys
// in order, an error its text flagged as an error.
func ExampleOne() {
	for _, r := range []result.Result{
		{Data: "three files"},
		{Data: map[string]any{"b": 2, "a": []int{1}}},
		result.FromError(nil, errors.New("the disk is full")),
	} {
		out := result.One(result.Call{ID: "call_1", Result: r}, result.Env{})
		fmt.Printf("error=%v %s\n", out.IsError, out.Text)
	}
	// Output:
	// error=false three files
	// error=false {"a":[1],"b":2}
	// error=true the disk is full
}

// files is a result.Store in memory, standing in for a workspace: it
// keeps what is saved by path.
type files map[string]string

func (f files) Save(name, data string) (string, error) {
	path := ".myelin/tool-results/" + name
	f[path] = data
	return path, nil
}

// A result longer than its cap is spilled: the whole text goes to a file
// in the workspace, and the model reads its head and a notice naming the
// file and how to read on.
func ExampleRound_spill() {
	long := strings.Repeat("a line of the log\n", 200) // 3,600 characters
	saved := files{}
	env := result.Env{
		Store:  saved,
		Limits: result.Limits{Agent: result.MinCap}, // a cap of 1,000 characters
		Now:    func() time.Time { return time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) },
	}
	out := result.Round([]result.Call{{ID: "call_1", Result: result.Result{Data: long}}}, env)[0]
	fmt.Println("spilled to", out.SpillPath)
	fmt.Println("the file holds the whole text:", saved[out.SpillPath] == long)
	fmt.Println("the model reads", result.Chars(out.Text), "of", out.Chars, "characters")
	fmt.Println(out.Text[strings.LastIndex(out.Text, "a line of the log\n")+len("a line of the log\n"):])
	// Output:
	// spilled to .myelin/tool-results/2026-12-05-call_1.txt
	// the file holds the whole text: true
	// the model reads 960 of 3600 characters
	// [myelin: this result is 3600 characters in 200 lines; shown above are the first 576 characters: lines 1-32. The whole result is in the workspace file .myelin/tool-results/2026-12-05-call_1.txt.
	// Read on: workspace--read {"path":".myelin/tool-results/2026-12-05-call_1.txt","offset":33}
	// Search it: workspace--grep {"pattern":"REGEX","path":".myelin/tool-results/2026-12-05-call_1.txt"}]
}

// A result an MCP server sent is read into a Result, then converted like
// any other.
func ExampleFromMCP() {
	r, err := result.FromMCP([]byte(`{"content":[{"type":"text","text":"12 open issues"},{"type":"text","text":"3 assigned to you"}],"isError":false}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(result.One(result.Call{ID: "call_1", Result: r}, result.Env{}).Text)
	// Output:
	// 12 open issues
	// 3 assigned to you
}
