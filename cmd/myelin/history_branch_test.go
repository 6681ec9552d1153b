package main

import (
	"strings"
	"testing"
)

// history fork prints a new conversation that reads the base's first
// messages; rewind keeps what it takes back as a branch, branches lists
// it, switch brings it back and, again, switches back.
func TestHistoryForkRewindBranchesAndSwitch(t *testing.T) {
	dir := workspaceWith(t, map[string]string{})
	storeConversation(t, dir, "c1", spilled("mine.txt"))

	out, errOut, code := cli(t, "history", "fork", "c1", "--at", "1", "--workspace", dir)
	if code != exitOK {
		t.Fatalf("fork: exit %d: %s", code, errOut)
	}
	fork := strings.TrimSpace(out)
	shown, errOut, code := cli(t, "history", "show", fork, "--workspace", dir)
	if code != exitOK || !strings.Contains(shown, "count") || strings.Contains(shown, "mine.txt") {
		t.Fatalf("show of the fork at 1 (exit %d, %s):\n%s\nwant the first message only", code, errOut, shown)
	}

	out, errOut, code = cli(t, "history", "rewind", "c1", "--at", "1", "--workspace", dir)
	if code != exitOK || !strings.Contains(out, "kept as branch ") {
		t.Fatalf("rewind: exit %d, %q, %s", code, out, errOut)
	}
	branches, _, code := cli(t, "history", "branches", "c1", "--workspace", dir)
	fields := strings.Fields(branches)
	if code != exitOK || len(fields) == 0 {
		t.Fatalf("branches: exit %d:\n%s", code, branches)
	}
	branch := fields[0]
	if shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir); strings.Contains(shown, "mine.txt") {
		t.Fatalf("c1 after the rewind still shows its second message:\n%s", shown)
	}
	if out, errOut, code = cli(t, "history", "switch", "c1", branch, "--workspace", dir); code != exitOK {
		t.Fatalf("switch: exit %d, %q, %s", code, out, errOut)
	}
	if shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir); !strings.Contains(shown, "mine.txt") {
		t.Fatalf("c1 after the switch lacks its second message again:\n%s", shown)
	}

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"history", "rewind", "c1"}, "want --at N"},
		{[]string{"history", "fork", "c1", "--at", "-2"}, "give a count of messages"},
		{[]string{"history", "list", "--at", "1"}, "--at goes with history fork and history rewind"},
		{[]string{"history", "switch", "c1"}, "want a conversation ID and one of its branches"},
		{[]string{"history", "switch", "c1", "c1"}, "not a branch"},
		{[]string{"history", "fork", "nope"}, "no such conversation"},
	} {
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if code == exitOK || !strings.Contains(errOut, tc.says) {
			t.Errorf("%q: exit %d, %q; want it refused saying %q", tc.args, code, errOut, tc.says)
		}
	}
}
