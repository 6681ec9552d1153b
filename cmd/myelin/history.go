package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/myelin-run/myelin/history"
)

const historyUsage = `Usage:
  myelin history list [--workspace DIR] [--store PATH]
      One line per conversation, most recent first: id, last update,
      messages, the first prompt.
  myelin history show ID [--json] [--workspace DIR] [--store PATH]
      The conversation's messages as stored, with usage per answer.

Flags:
`

func historyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, historyUsage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("myelin history", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wsDir := fs.String("workspace", ".", "the workspace root `DIR`")
	storePath := fs.String("store", "", "the history store `PATH` (default WORKSPACE/.myelin/history.db)")
	asJSON := fs.Bool("json", false, "print the messages as JSON (show)")
	if isHelp(sub) {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, historyUsage)
		fs.PrintDefaults()
		return exitOK
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, historyUsage)
		fs.PrintDefaults()
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitUsage
	}
	path := *storePath
	if path == "" {
		abs, err := filepath.Abs(*wsDir)
		if err != nil {
			fmt.Fprintf(stderr, "myelin history: %v\n", err)
			return exitUsage
		}
		path = filepath.Join(abs, ".myelin", "history.db")
	}
	switch sub {
	case "list":
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "myelin history list: takes no arguments, got %q\n", pos)
			return exitUsage
		}
	case "show":
		if len(pos) != 1 {
			fmt.Fprintf(stderr, "myelin history show: want one conversation ID, got %d arguments\n", len(pos))
			return exitUsage
		}
	default:
		fmt.Fprintf(stderr, "myelin history: unknown command %q\n\n%s", sub, historyUsage)
		return exitUsage
	}
	store, err := history.OpenSQLite(path)
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	defer store.Close()
	if sub == "list" {
		list, err := store.List(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "myelin history: %v\n", err)
			return exitError
		}
		for _, c := range list {
			first := ""
			if msgs, err := store.Messages(ctx, c.ID); err == nil && len(msgs) > 0 && len(msgs[0].Parts) > 0 {
				first = oneLine(msgs[0].Parts[0].Text, 60)
			}
			fmt.Fprintf(stdout, "%s\t%s\t%d messages\t%s\n", c.ID, c.Updated.Local().Format(time.DateTime), c.Messages, first)
		}
		return exitOK
	}
	msgs, err := store.Messages(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "myelin history: %v\n", err)
		return exitError
	}
	if *asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(msgs); err != nil {
			fmt.Fprintf(stderr, "myelin history: %v\n", err)
			return exitError
		}
		stdout.Write(buf.Bytes())
		return exitOK
	}
	for _, m := range msgs {
		fmt.Fprintf(stdout, "── %s  %s\n", m.Role, m.Time.Local().Format(time.DateTime))
		for _, p := range m.Parts {
			switch p.Type {
			case history.TextPart:
				fmt.Fprintf(stdout, "%s\n", p.Text)
			case history.ToolCallPart:
				in := string(p.Input)
				if in == "" {
					in = p.Text + "  (not JSON)"
				}
				fmt.Fprintf(stdout, "[tool call %s] %s %s\n", p.CallID, p.Name, in)
			case history.ToolResultPart:
				flag := ""
				if p.IsError {
					flag = " error"
				}
				if p.SpillPath != "" {
					flag += ", whole result in " + p.SpillPath
				}
				fmt.Fprintf(stdout, "[tool result %s%s]\n%s\n", p.CallID, flag, p.Text)
			}
		}
		if u := m.Usage; u != nil {
			fmt.Fprintf(stdout, "[usage: %d input, %d cached, %d cache-written, %d output]\n", u.Input, u.CacheRead, u.CacheWrite, u.Output)
		}
	}
	return exitOK
}

// oneLine is s with its white space folded to single spaces, at most n
// characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
