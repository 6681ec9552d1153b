package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

const toolUsage = `Usage:
  myelin tool list [--workspace DIR] [--allow-shell] [--mcp-config FILE]...
      One line per tool: its name, a tab, the first line of its description.
      code_execution is offered unless --no-code-execution.
      The tools of the MCP servers in WORKSPACE/.mcp.json and --mcp-config
      files are listed and called like the built-in ones.
  myelin tool call NAME ARGS_JSON [flags]
      Run one call as the agent would and print the text the conversation
      would store, byte for byte. Exit status 0 for a success, 1 for an
      error result (its text still printed), 2 for a usage error.

Flags (before or after the arguments):
`

// toolFlags are the flags of `myelin tool list` and `myelin tool call`.
type toolFlags struct {
	workspace string
	inlineCap int
	callID    string
	json      bool
	tools     toolsetFlags
}

func (f *toolFlags) set(call bool) *flag.FlagSet {
	fs := flag.NewFlagSet("myelin tool", flag.ContinueOnError)
	fs.StringVar(&f.workspace, "workspace", ".", "the workspace root `DIR`")
	f.tools.add(fs)
	if call {
		fs.IntVar(&f.inlineCap, "inline-cap", 0, "the inline cap `N` in characters (default 24000, at least 1000)")
		fs.StringVar(&f.callID, "call-id", "", "the call `ID`, which names a spill file (default: a random one)")
		fs.BoolVar(&f.json, "json", false, "print one JSON object: text, is_error, structured, spill_path")
	}
	return fs
}

func toolCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, toolUsage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	var f toolFlags
	var fs *flag.FlagSet
	switch sub {
	case "list":
		fs = f.set(false)
	case "call":
		fs = f.set(true)
	case "help", "-h", "-help", "--help":
		fs = f.set(true)
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, toolUsage)
		fs.PrintDefaults()
		return exitOK
	default:
		fmt.Fprintf(stderr, "myelin tool: unknown command %q\n\n%s", sub, toolUsage)
		return exitUsage
	}
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), toolUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	}
	if err != nil {
		return exitUsage // the flag package has said what was wrong
	}
	ws, err := workspace.Open(f.workspace)
	if err != nil {
		fmt.Fprintln(stderr, "myelin:", err)
		return exitUsage
	}
	defer ws.Close()
	env := result.Env{Store: ws, Limits: result.Limits{Agent: f.inlineCap}}
	ts, err := openToolset(ctx, ws, f.tools, env, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "myelin:", err)
		return exitUsage
	}
	defer ts.close()
	reg := ts.reg
	if sub == "list" {
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "myelin tool list: takes no arguments, got %q\n", pos)
			return exitUsage
		}
		for _, t := range reg.Tools() {
			fmt.Fprintf(stdout, "%s\t%s\n", t.Name, t.Summary())
		}
		return exitOK
	}
	return toolCall(ctx, f, pos, reg, env, stdout, stderr)
}

func toolCall(ctx context.Context, f toolFlags, pos []string, reg *tool.Registry, env result.Env, stdout, stderr io.Writer) int {
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "myelin tool call: want NAME and ARGS_JSON, got %d arguments\n\n%s", len(pos), toolUsage)
		return exitUsage
	}
	name, args := pos[0], pos[1]
	if !json.Valid([]byte(args)) {
		fmt.Fprintf(stderr, "myelin tool call: ARGS_JSON is not valid JSON: %s\n", args)
		return exitUsage
	}
	if f.inlineCap < 0 {
		fmt.Fprintf(stderr, "myelin tool call: --inline-cap must be positive, got %d\n", f.inlineCap)
		return exitUsage
	}
	if reg.Get(name) == nil {
		fmt.Fprintf(stderr, "myelin tool call: there is no tool named %q; `myelin tool list` lists them\n", name)
		return exitUsage
	}
	id := f.callID
	if id == "" {
		id = randomID()
	}
	d := &tool.Dispatcher{Tools: reg, Env: env}
	out := d.Call(ctx, tool.Call{ID: id, Name: name, Input: json.RawMessage(args)})
	if f.json {
		if err := writeJSON(stdout, out); err != nil {
			fmt.Fprintln(stderr, "myelin:", err)
			return exitError
		}
	} else {
		io.WriteString(stdout, out.Text)
	}
	if out.IsError {
		return exitError
	}
	return exitOK
}

// writeJSON prints the --json form of an output.
func writeJSON(w io.Writer, out result.Output) error {
	v := struct {
		Text       string          `json:"text"`
		IsError    bool            `json:"is_error"`
		Structured json.RawMessage `json:"structured,omitempty"`
		SpillPath  string          `json:"spill_path,omitempty"`
	}{out.Text, out.IsError, out.Structured, out.SpillPath}
	raw, err := result.JSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(raw, '\n'))
	return err
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positionals. After `--` all are
// positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "call_" + hex.EncodeToString(b)
}
