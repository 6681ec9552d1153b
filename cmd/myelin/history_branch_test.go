package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
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

// storeTurns stores conversation id in the workspace's store: each of
// kept kept as the agent keeps a file version, then a turn per entry of
// turns(their hashes) (a prompt, a write call, its result recording those
// changes, an answer).
func storeTurns(t *testing.T, dir, id string, kept []string, turns func(hashes []string) [][]history.FileChange) {
	t.Helper()
	s := openWorkspaceStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, c := range kept {
		h, err := s.PutBlob(ctx, id, history.FileVersionPath(history.BlobHash([]byte(c))), []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	for i, changes := range turns(hashes) {
		call := fmt.Sprintf("call%d", i)
		err := s.Append(ctx, id,
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("prompt %d", i)}}},
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: call, Name: "workspace--write", Input: json.RawMessage(`{}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: call, Text: "written", Files: changes}}},
			history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: fmt.Sprintf("answer %d", i)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// undo --files takes back the last turn and the files it wrote, redo
// --files brings both back; each says what it did to the files and what
// it does not track; without --files, that no file was changed.
func TestHistoryUndoAndRedoPutTheFilesBackWithFiles(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "v2", "new.txt": "made"})
	storeTurns(t, dir, "c1", []string{"v1", "v2", "made"}, func(h []string) [][]history.FileChange {
		return [][]history.FileChange{
			{{Path: "a.txt", Created: true, After: h[0]}},
			{{Path: "a.txt", Before: h[0], After: h[1]}, {Path: "new.txt", Created: true, After: h[2]}},
		}
	})

	out, errOut, code := cli(t, "history", "undo", "c1", "--files", "--workspace", dir)
	if code != exitOK {
		t.Fatalf("undo: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"goes on from message 4, before its last turn", "  restored a.txt\n", "  removed new.txt\n", rewind.NotTracked} {
		if !strings.Contains(out, want) {
			t.Errorf("undo's report lacks %q:\n%s", want, out)
		}
	}
	if a, n := readFile(t, dir, "a.txt"), readFile(t, dir, "new.txt"); a != "v1" || n != "<none>" {
		t.Fatalf("after undo --files: a.txt %q (want v1), new.txt %q (want none)", a, n)
	}
	out, errOut, code = cli(t, "history", "redo", "c1", "--files", "--workspace", dir)
	if code != exitOK || !strings.Contains(out, "  restored a.txt\n  restored new.txt\n") || !strings.Contains(out, rewind.NotTracked) {
		t.Fatalf("redo: exit %d, %s\n%s", code, errOut, out)
	}
	if a, n := readFile(t, dir, "a.txt"), readFile(t, dir, "new.txt"); a != "v2" || n != "made" {
		t.Fatalf("after redo --files: a.txt %q (want v2), new.txt %q (want made)", a, n)
	}
	out, _, code = cli(t, "history", "undo", "c1", "--workspace", dir)
	if code != exitOK || !strings.Contains(out, "workspace files were not changed") || readFile(t, dir, "a.txt") != "v2" {
		t.Fatalf("undo without --files: exit %d, a.txt %q (want v2 left)\n%s", code, readFile(t, dir, "a.txt"), out)
	}
	if _, errOut, code = cli(t, "history", "redo", "c1", "--workspace", dir); code != exitOK {
		t.Fatalf("redo: exit %d: %s", code, errOut)
	}
	if _, errOut, code = cli(t, "history", "redo", "c1", "--workspace", dir); code == exitOK || !strings.Contains(errOut, "there is nothing to redo") {
		t.Fatalf("a second redo: exit %d, %q; want it refused saying there is nothing to redo", code, errOut)
	}
}

// A file changed since the tools wrote it is left, and the rewind says
// so; the conversation is rewound all the same.
func TestHistoryRewindWithFilesLeavesAFileChangedSinceAndSaysSo(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "edited by hand"})
	storeTurns(t, dir, "c1", []string{"v0", "v1"}, func(h []string) [][]history.FileChange {
		return [][]history.FileChange{{{Path: "a.txt", Before: h[0], After: h[1]}}}
	})
	out, errOut, code := cli(t, "history", "rewind", "c1", "--at", "0", "--files", "--workspace", dir)
	if code != exitOK || !strings.Contains(out, "  left a.txt: changed since by someone else") || !strings.Contains(out, rewind.NotTracked) {
		t.Fatalf("rewind --files: exit %d, %s\n%s", code, errOut, out)
	}
	if got := readFile(t, dir, "a.txt"); got != "edited by hand" {
		t.Fatalf("a.txt holds %q; want the hand edit left", got)
	}
}

// show prints where a conversation stands in the branch tree: the fork's
// base and point, the branch's conversation, a conversation's branches
// and forks; list says which conversation a fork continues.
func TestHistoryShowAndListPrintTheBranchTree(t *testing.T) {
	dir := workspaceWith(t, map[string]string{})
	storeTurns(t, dir, "c1", nil, func([]string) [][]history.FileChange { return make([][]history.FileChange, 2) })
	out, errOut, code := cli(t, "history", "fork", "c1", "--at", "4", "--workspace", dir)
	if code != exitOK {
		t.Fatalf("fork: exit %d: %s", code, errOut)
	}
	fork := strings.TrimSpace(out)
	if _, errOut, code := cli(t, "history", "undo", "c1", "--workspace", dir); code != exitOK {
		t.Fatalf("undo: exit %d: %s", code, errOut)
	}
	shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir)
	for _, want := range []string{"branches: c1~1 (from message 4, 8 messages)\n", "forks: " + fork + " (at message 4)\n"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show c1 lacks %q:\n%s", want, shown)
		}
	}
	if shown, _, _ := cli(t, "history", "show", fork, "--workspace", dir); !strings.HasPrefix(shown, "fork of conversation c1 at message 4\n") {
		t.Errorf("show of the fork does not begin saying what it forks:\n%s", shown)
	}
	if shown, _, _ := cli(t, "history", "show", "c1~1", "--workspace", dir); !strings.HasPrefix(shown, "branch of conversation c1, parting from it after message 4 ") {
		t.Errorf("show of the branch does not begin saying whose it is:\n%s", shown)
	}
	list, _, _ := cli(t, "history", "list", "--workspace", dir)
	if !strings.Contains(list, "\t(fork of conversation c1 at message 4)") {
		t.Errorf("list does not say what the fork continues:\n%s", list)
	}
	listJSON, _, _ := cli(t, "history", "list", "--json", "--workspace", dir)
	if !strings.Contains(listJSON, `"fork_of":"c1","fork_at":4`) {
		t.Errorf("list --json lacks the fork's fork_of and fork_at:\n%s", listJSON)
	}
	branches, _, _ := cli(t, "history", "branches", "c1", "--workspace", dir)
	if !strings.Contains(branches, "\tfrom message 4\t8 messages") {
		t.Errorf("branches:\n%s", branches)
	}
	// switched back and forth, c1 reads from its own branches perhaps,
	// and is no fork of them
	for _, sub := range []string{"redo", "undo", "redo"} {
		if _, errOut, code := cli(t, "history", sub, "c1", "--workspace", dir); code != exitOK {
			t.Fatalf("%s: exit %d: %s", sub, code, errOut)
		}
	}
	if shown, _, _ := cli(t, "history", "show", "c1", "--workspace", dir); strings.Contains(shown, "fork of") || !strings.Contains(shown, "answer 1") {
		t.Errorf("show c1 after redo, undo, redo:\n%s\nwant its whole conversation, and no fork", shown)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"history", "list", "--files"}, "--files goes with history rewind, undo, redo and switch"},
		{[]string{"history", "undo", "c1", "c2"}, "want one conversation ID"},
		{[]string{"history", "undo", "nope"}, "no such conversation"},
		{[]string{"history", "undo", "c1", "--at", "1"}, "--at goes with history fork and history rewind"},
	} {
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if code == exitOK || !strings.Contains(errOut, tc.says) {
			t.Errorf("%q: exit %d, %q; want it refused saying %q", tc.args, code, errOut, tc.says)
		}
	}
}
