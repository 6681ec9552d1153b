package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// history fork and rewind --at, and run --fork ID@N, at a point inside a
// round (after an answer with tool calls, before their results) are
// refused naming the points on either side, and nothing is made or moved
// (review M1).
func TestAForkOrRewindInsideARoundIsRefusedNamingThePointsAround(t *testing.T) {
	dir := workspaceWith(t, map[string]string{})
	storeTurns(t, dir, "c1", nil, func([]string) [][]history.FileChange { return [][]history.FileChange{nil} })
	fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, args := range [][]string{
		{"history", "fork", "c1", "--at", "2"},
		{"history", "rewind", "c1", "--at", "2"},
		{"run", "--fork", "c1@2", "hi"},
	} {
		_, errOut, code := cli(t, append(args, "--workspace", dir)...)
		if code == exitOK || !strings.Contains(errOut, "give 1 (before the answer) or 3 (after its results)") {
			t.Errorf("%q: exit %d, %q; want it refused naming the points 1 and 3", args, code, errOut)
		}
	}
	if list, _, _ := cli(t, "history", "list", "--workspace", dir); strings.Count(list, "\n") != 1 {
		t.Fatalf("after the refused forks and rewind the store lists:\n%s\nwant c1 alone", list)
	}
	if shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir); !strings.Contains(shown, "answer 0") {
		t.Fatalf("c1 after the refused rewind lost its answer:\n%s", shown)
	}
}
