// Command myelin is the command-line host of the myelin agent runtime. It is
// thin: it parses flags, assembles the tool set from the library packages and
// prints what they return, byte for byte. It must not convert results or
// reach files itself; packages result, tool, workspace and shell do that.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/internal/startgc"
)

// Exit statuses of every command.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed, or a tool call gave an error result
	exitUsage = 2 // the command line was wrong
)

const usage = `myelin runs LLM agents whose tool results reach the model intact, bounded
and cache-stable.

Usage:
  myelin run [flags] PROMPT
  myelin chat [flags]
  myelin history list [--workspace DIR] [--store PATH]
  myelin history show ID [--json] [--workspace DIR] [--store PATH]
  myelin history delete ID [--workspace DIR] [--store PATH]
  myelin history prune --older-than AGE [--dry-run] [--workspace DIR]
                   [--store PATH]
  myelin tool list [--workspace DIR] [--allow-shell] [--mcp-config FILE]
  myelin tool describe NAME [--json] [--workspace DIR] [--allow-shell]
                   [--mcp-config FILE]
  myelin tool call NAME ARGS_JSON [--workspace DIR] [--allow-shell]
                   [--mcp-config FILE] [--inline-cap N] [--call-id ID] [--json]
  myelin mcp list [--workspace DIR] [--mcp-config FILE]
  myelin mcp trust [--workspace DIR]
  myelin mcp login SERVER [--workspace DIR] [--mcp-config FILE]
  myelin mcp serve [--workspace DIR] [--allow-shell] [--http ADDR] [--agent]
                   [tool flags]
  myelin serve [--addr HOST:PORT] [--token TOKEN] [run's flags]
  myelin version
  myelin help

Run "myelin COMMAND --help" for a command's flags.
`

func main() {
	begin(os.Args[1:])
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, stopSignals(os.Args[1:])...)
	code := run(withInterrupts(context.Background(), interrupts), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(interrupts)
	os.Exit(code)
}

// begin readies the process for the command args: run and chat start
// as startsATurn says, until startDone; every other command has the
// collector as configured from here on.
func begin(args []string) {
	if !startsATurn(args) {
		startgc.Done()
		return
	}
	hugepage.Allow()
}

// startsATurn reports whether args are run or chat, whose start reads the
// conversation's stored messages and builds its first request: until
// that request is sent (session.turn calls startDone) they keep the
// collector put off (internal/startgc) and have the large arrays they
// make in huge pages (internal/hugepage). A resume of 100,000 messages
// allocates some 100 MB, nearly all of it kept until the request leaves:
// at GOGC 100 the collector ran five cycles over it on the way, at 400
// two, and a cycle over the unpacking doubled its CPU; with the first
// goal at 256 MB it runs none (docs/performance.md, "Resuming a stored
// conversation", "What changed in the eighth session"). First touching
// those arrays 4 KiB at a time was about 40% of that resume's CPU ("Huge
// pages for a run's start").
func startsATurn(args []string) bool {
	return len(args) > 0 && (args[0] == "run" || args[0] == "chat")
}

// startDone ends what begin started for a turn once its first request is
// sent (startsATurn): the collector as configured, no more huge pages
// asked for. A variable for the tests.
var startDone = func() {
	startgc.Done()
	hugepage.Stop()
}

// run is the whole CLI, for main and for tests.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "--version":
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprint(stdout, "Usage:\n  myelin version\n      Print myelin's version.\n")
			return exitOK
		}
		fmt.Fprintln(stdout, "myelin", version())
		return exitOK
	case "run", "chat": // each decides what an interrupt ends
		return runCommand(ctx, args[0], args[1:], stdin, stdout, stderr)
	case "serve": // it stops gracefully, and a second signal hurries it
		return serveCommand(ctx, args[1:], stdout, stderr)
	}
	// Every other command ends at the first interrupt.
	ctx, end := interruptible(ctx)
	defer end()
	switch args[0] {
	case "tool":
		return toolCommand(ctx, args[1:], stdin, stdout, stderr)
	case "history":
		return historyCommand(ctx, args[1:], stdout, stderr)
	case "mcp":
		return mcpCommand(ctx, args[1:], stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "myelin: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
