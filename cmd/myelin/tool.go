package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/delegate"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/shell"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

const toolUsage = `Usage:
  myelin tool list [--workspace DIR] [--allow-shell] [--mcp-config FILE]...
      One line per tool: its name, a tab, the first line of its description.
      code_execution is offered unless --no-code-execution.
      The tools of the MCP servers in WORKSPACE/.mcp.json and --mcp-config
      files are listed and called like the built-in ones.
  myelin tool describe NAME [--json] [flags]
      The tool's whole description and its input schema (JSON Schema): the
      fields ARGS_JSON of a call may hold. --json prints the definition as
      one JSON object: name, description, input_schema.
  myelin tool call NAME ARGS_JSON [flags]
      Run one call as the agent would and print the text the conversation
      would store, byte for byte. Exit status 0 for a success, 1 for an
      error result (its text still printed), 2 for a usage error.
      ARGS_JSON is the JSON itself, or - to read it from standard input,
      or @FILE to read it from FILE (for arguments too long for a command
      line; at most 64 MiB).
`

// toolFlags are the flags of `myelin tool list`, `describe` and `call`.
type toolFlags struct {
	workspace string
	inlineCap int
	callID    string
	json      bool
	tools     toolsetFlags
}

// set is the flag set of the tool subcommand sub: list, describe or call
// (or "" for the help of all three, which lists every flag).
func (f *toolFlags) set(sub string) *flag.FlagSet {
	fs := newFlagSet("tool")
	fs.StringVar(&f.workspace, "workspace", ".", "the workspace root `DIR`")
	f.tools.add(fs)
	if sub == "call" || sub == "" {
		fs.IntVar(&f.inlineCap, "inline-cap", 0, fmt.Sprintf("the inline cap `N` in characters (default %d; at least %d)", result.DefaultCap, result.MinCap))
		fs.StringVar(&f.callID, "call-id", "", "the call `ID`, which names a spill file (default: a random one)")
	}
	if sub != "list" {
		fs.BoolVar(&f.json, "json", false, "call: print one JSON object: text, is_error, structured, spill_path; describe: print the tool's definition as JSON")
	}
	return fs
}

func toolCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usageError(stderr, "tool", "want a command: list, describe or call")
	}
	sub, args := args[0], args[1:]
	var f toolFlags
	switch sub {
	case "list", "describe", "call":
	case "help", "-h", "-help", "--help":
		printHelp(stdout, toolUsage, f.set(""))
		return exitOK
	default:
		return usageError(stderr, "tool", fmt.Sprintf("unknown command %q: want list, describe or call", sub))
	}
	cmd := "tool " + sub
	fs := f.set(sub)
	pos, code, done := parseCommand(cmd, toolUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case sub == "list" && len(pos) != 0:
		return usageError(stderr, cmd, fmt.Sprintf("takes no arguments, got %q", pos))
	case sub == "describe" && len(pos) != 1:
		return usageError(stderr, cmd, fmt.Sprintf("want one tool NAME, got %d arguments %q", len(pos), pos))
	case sub == "call" && len(pos) != 2:
		return usageError(stderr, cmd, fmt.Sprintf("want NAME and ARGS_JSON, got %d arguments %q", len(pos), pos))
	}
	if sub == "call" {
		args, err := callArgs(pos[1], stdin)
		if err != nil {
			return usageError(stderr, cmd, err.Error())
		}
		pos[1] = args
	}
	if sub == "call" && explicit(fs)["inline-cap"] && f.inlineCap < result.MinCap {
		return usageError(stderr, cmd, inlineCapError(f.inlineCap))
	}
	ws, err := workspace.Open(f.workspace)
	if err != nil {
		return usageError(stderr, cmd, err.Error())
	}
	defer ws.Close()
	f.tools.mcp.ui = newMCPUI(stdin, stderr)
	// The tools a conversation is offered, background scripts' included
	// (code_execution--list, --cancel, and code_execution's words on
	// them), with their default limits: what is listed and described is
	// what the model gets.
	f.tools.background = &backgroundSetup{wakes: background.NewQueue()}
	env := result.Env{Store: ws, Limits: result.Limits{Agent: f.inlineCap}}
	ts, err := openToolset(ctx, ws, f.tools, env, stderr)
	if err != nil {
		return usageError(stderr, cmd, err.Error())
	}
	defer ts.close()
	reg := ts.reg
	if sub == "list" {
		for _, t := range reg.Tools() {
			fmt.Fprintf(stdout, "%s\t%s\n", t.Name, t.Summary())
		}
		return exitOK
	}
	t := reg.Get(pos[0])
	if t == nil {
		return usageError(stderr, cmd, notOffered(pos[0], f.tools))
	}
	if sub == "describe" {
		return toolDescribe(t, f.json, stdout, stderr)
	}
	return toolCall(ctx, f, pos[0], pos[1], reg, env, stdout, stderr)
}

// maxCallArgs bounds ARGS_JSON read from standard input or a file.
const maxCallArgs = 64 << 20

// callArgs is the ARGS_JSON of `tool call`: the argument itself, or, for
// arguments too long for a command line (the kernel's 128 KiB bound on one
// argument), what standard input holds (`-`) or a file (`@FILE`, a path
// on the user's machine, not confined to the workspace: the user typed
// it). A literal ARGS_JSON never starts with @ and is never "-", so the
// forms cannot be mistaken for one another. It must hold valid JSON.
func callArgs(arg string, stdin io.Reader) (string, error) {
	from := ""
	var r io.Reader
	switch {
	case arg == "-":
		from, r = "standard input", stdin
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		if name == "" {
			return "", fmt.Errorf("ARGS_JSON %q names no file; write @FILE", arg)
		}
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("ARGS_JSON %s: %w", arg, err)
		}
		defer f.Close()
		from, r = "file "+name, f
	default:
		if !json.Valid([]byte(arg)) {
			return "", fmt.Errorf("ARGS_JSON is not valid JSON: %s", clipArg(arg))
		}
		return arg, nil
	}
	if r == nil {
		return "", fmt.Errorf("ARGS_JSON - reads standard input, and there is none")
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxCallArgs+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("ARGS_JSON from %s: %w", from, err)
	case len(raw) > maxCallArgs:
		return "", fmt.Errorf("ARGS_JSON from %s is over %d MiB", from, maxCallArgs>>20)
	case !json.Valid(raw):
		return "", fmt.Errorf("ARGS_JSON from %s is not valid JSON: %s", from, clipArg(string(raw)))
	}
	return string(raw), nil
}

// clipArg bounds an ARGS_JSON echoed in an error to 200 bytes.
func clipArg(s string) string {
	if len(s) <= 200 {
		return s
	}
	return strings.ToValidUTF8(s[:200], "") + "…"
}

// inlineCapError is the error of an --inline-cap below the floor, which
// the conversion would otherwise raise without a word.
func inlineCapError(n int) string {
	return fmt.Sprintf("--inline-cap %d: the inline cap is at least %d characters (leave the flag out for the default, %d)", n, result.MinCap, result.DefaultCap)
}

// notOffered says why there is no tool called name: it is offered only
// with a flag, or there is no such tool at all.
func notOffered(name string, f toolsetFlags) string {
	switch {
	case name == shell.Name && !f.allowShell:
		return fmt.Sprintf("%s is offered only with --allow-shell (it runs commands in the workspace, sandboxed unless --sandbox off)", name)
	case name == script.Name && f.noCodeExecution:
		return fmt.Sprintf("%s is not offered because of --no-code-execution", name)
	case name == delegate.Name:
		return fmt.Sprintf("%s is offered only in a conversation, with --delegate (myelin run, chat or serve): a subagent runs as a conversation of its own", name)
	}
	return fmt.Sprintf("there is no tool named %q; `myelin tool list` lists them", name)
}

// toolDescribe prints a tool's description and input schema, as text or
// as the JSON definition a provider is sent.
func toolDescribe(t *tool.Tool, asJSON bool, stdout, stderr io.Writer) int {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			fmt.Fprintf(stderr, "myelin tool describe: the input schema of %s: %v\n", t.Name, err)
			return exitError
		}
		schema = raw
	}
	if asJSON {
		v := struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{t.Name, t.Description, schema}
		raw, err := result.JSON(v)
		if err != nil {
			fmt.Fprintf(stderr, "myelin tool describe: %v\n", err)
			return exitError
		}
		stdout.Write(append(raw, '\n'))
		return exitOK
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, schema, "", "  "); err != nil {
		fmt.Fprintf(stderr, "myelin tool describe: the input schema of %s: %v\n", t.Name, err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s\n\n%s\n\nInput schema:\n%s\n", t.Name, strings.TrimSpace(t.Description), indented.Bytes())
	return exitOK
}

func toolCall(ctx context.Context, f toolFlags, name, args string, reg *tool.Registry, env result.Env, stdout, stderr io.Writer) int {
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

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "call_" + hex.EncodeToString(b)
}
