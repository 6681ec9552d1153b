package main

import (
	"context"
	"strings"
	"testing"
	"time"

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
	// a round in flight: the fork at the end is made before its answer
	s := openWorkspaceStore(t, dir)
	err := s.Append(context.Background(), "c1",
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "again"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "call_9", Name: "agent--delegate", Input: []byte(`{"task":"x"}`)}}})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "history", "fork", "c1", "--workspace", dir)
	if code != exitOK || !strings.Contains(errOut, "forked conversation c1 at message 5") {
		t.Fatalf("history fork of c1 while a round is in flight: exit %d, %q, %q; want the fork made at 5, before the answer whose call runs, and said", code, out, errOut)
	}
}

// history undo, rewind, redo and switch refuse while another writer holds
// the conversation's claim, saying so by what the claim names: the
// conversation (a turn of it, or another move) or a branch its own writer
// advances (review S1).
func TestHistoryMovesRefusedByAHeldClaimSayWhoHoldsIt(t *testing.T) {
	dir := workspaceWith(t, map[string]string{})
	storeTurns(t, dir, "c1", nil, func([]string) [][]history.FileChange { return [][]history.FileChange{nil, nil} })
	if _, errOut, code := cli(t, "history", "undo", "c1", "--workspace", dir); code != exitOK {
		t.Fatalf("undo: exit %d: %s", code, errOut)
	}
	s := openWorkspaceStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		claim string
		args  []string
		says  string
	}{
		{"c1", []string{"history", "undo", "c1"}, "try again once that writer (a turn of it, or another move) is done"},
		{"c1", []string{"history", "rewind", "c1", "--at", "0"}, "try again once that writer (a turn of it, or another move) is done"},
		{"c1", []string{"history", "redo", "c1"}, "try again once that writer (a turn of it, or another move) is done"},
		{"c1~1", []string{"history", "switch", "c1", "c1~1"}, "c1~1 is a branch of c1 that its own writer is advancing"},
	} {
		h, err := s.Claim(ctx, tc.claim, history.NewHolder(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if err := s.Release(ctx, tc.claim, h); err != nil {
			t.Fatal(err)
		}
		if code == exitOK || !strings.Contains(errOut, tc.says) || strings.Contains(errOut, "a turn of it is running") {
			t.Errorf("%q while %s is claimed: exit %d, %q; want it refused saying %q", tc.args, tc.claim, code, errOut, tc.says)
		}
	}
	if shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir); !strings.Contains(shown, "answer 0") || strings.Contains(shown, "answer 1") {
		t.Fatalf("c1 after the refused moves is not as the undo left it:\n%s", shown)
	}
}
