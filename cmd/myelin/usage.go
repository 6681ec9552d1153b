package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// A command's usage is printed in one place, here, so that every command
// behaves the same:
//
//   - --help (or -h, or `help`) prints the usage and then the command's flags
//     on stdout, once, and exits 0;
//   - a usage error prints what was wrong, with the input that was wrong, and
//     where the usage is, on stderr, and exits 2. It does not print the usage
//     again: a wrong flag is one line, not a screenful.
//
// The flag package never prints: its output is discarded and its Usage does
// nothing, because it would print the usage to its output on -help and on
// every parse error, in addition to what the command prints.

// flagsHeader introduces the flag list after a command's usage text.
const flagsHeader = "\nFlags (before or after the arguments):\n"

// newFlagSet is a flag set named "myelin CMD" that never prints by itself.
func newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("myelin "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printHelp writes a command's usage text and, when it has flags, their
// list under flagsHeader.
func printHelp(w io.Writer, text string, fs *flag.FlagSet) {
	io.WriteString(w, text)
	if fs == nil {
		return
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	io.WriteString(w, flagsHeader)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// usageError prints a usage error of the command cmd ("tool call") on
// stderr and returns exitUsage. msg says what was wrong and with what input.
func usageError(stderr io.Writer, cmd, msg string) int {
	top, _, _ := strings.Cut(cmd, " ")
	fmt.Fprintf(stderr, "myelin %s: %s\nRun \"myelin %s --help\" for its usage and flags.\n", cmd, msg, top)
	return exitUsage
}

// parseCommand parses a command's flags and positionals. done is true when
// the command must stop here with code: after printing its help (code 0) or
// a usage error (code 2).
func parseCommand(cmd, text string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, text, fs)
		return nil, exitOK, true
	}
	if err != nil {
		return nil, usageError(stderr, cmd, err.Error()), true
	}
	return pos, exitOK, false
}

// explicit reports which flags the command line set, by name.
func explicit(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
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
		// flag.Parse takes a `--` itself: the word before what it left
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
