package main

import (
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestTheServicesTakeSIGTERMAsAnInterruptAndTheOtherCommandsDoNot(t *testing.T) {
	for _, tc := range []struct {
		args []string
		term bool
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0"}, true},
		{[]string{"mcp", "serve", "--http", "127.0.0.1:0"}, true},
		{[]string{"mcp", "serve"}, true},
		{[]string{"mcp", "list"}, false},
		{[]string{"run", "hello"}, false},
		{[]string{"chat"}, false},
		{nil, false},
	} {
		got := stopSignals(tc.args)
		if !slices.Contains(got, os.Signal(os.Interrupt)) {
			t.Errorf("stopSignals(%q) = %v: Ctrl-C must interrupt every command", tc.args, got)
		}
		if slices.Contains(got, os.Signal(syscall.SIGTERM)) != tc.term {
			t.Errorf("stopSignals(%q) = %v: SIGTERM taken = %v, want %v", tc.args, got, !tc.term, tc.term)
		}
	}
}
