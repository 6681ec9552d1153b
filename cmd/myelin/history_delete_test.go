package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// spilled is a conversation whose result was spilled to the file name.
func spilled(name string) []history.Message {
	return []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "count"}}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "1\n2\n[whole in .myelin/tool-results/" + name + "]", SpillPath: ".myelin/tool-results/" + name}}},
	}
}

func TestHistoryDeleteRemovesTheConversationAndTheSpillFilesItNames(t *testing.T) {
	dir := workspaceWith(t, map[string]string{
		".myelin/tool-results/mine.txt":   "mine",
		".myelin/tool-results/theirs.txt": "theirs",
	})
	storeConversation(t, dir, "c1", spilled("mine.txt"))
	storeConversation(t, dir, "c2", spilled("theirs.txt"))
	out, errOut, code := cli(t, "history", "delete", "c1", "--workspace", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"deleted conversation c1 from ", ": 2 messages, 0 requests sent, 1 spill file\n", "  removed .myelin/tool-results/mine.txt\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin/tool-results/mine.txt")); !os.IsNotExist(err) {
		t.Errorf("the deleted conversation's spill file: %v; want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin/tool-results/theirs.txt")); err != nil {
		t.Errorf("the other conversation's spill file: %v; want it kept", err)
	}
	list, _, _ := cli(t, "history", "list", "--workspace", dir)
	if strings.Contains(list, "c1\t") || !strings.Contains(list, "c2\t") {
		t.Errorf("history list after the delete:\n%s\nwant c2 alone", list)
	}
	_, errOut, code = cli(t, "history", "delete", "c1", "--workspace", dir)
	if code != exitError || !strings.Contains(errOut, `no such conversation "c1"`) {
		t.Errorf("deleting it again: exit %d, %q; want 1 and no such conversation", code, errOut)
	}
}

func TestHistoryDeleteIsRefusedWhileATurnRuns(t *testing.T) {
	dir := workspaceWith(t, map[string]string{".myelin/tool-results/mine.txt": "mine"})
	storeConversation(t, dir, "c1", spilled("mine.txt"))
	s := openWorkspaceStore(t, dir)
	defer s.Close()
	if _, err := s.Claim(context.Background(), "c1", history.NewHolder(), time.Minute); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, "history", "delete", "c1", "--workspace", dir)
	if code != exitError || !strings.Contains(errOut, "is being advanced by another writer") || !strings.Contains(errOut, "nothing was deleted") {
		t.Fatalf("exit %d, %q; want 1, saying a turn holds it and nothing was deleted", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin/tool-results/mine.txt")); err != nil {
		t.Errorf("its spill file after the refusal: %v", err)
	}
}

func TestHistoryPruneRemovesOldFilesNoConversationNames(t *testing.T) {
	dir := workspaceWith(t, map[string]string{
		".myelin/tool-results/named.txt":  "named",
		".myelin/tool-results/orphan.txt": "orphan",
		".myelin/tool-results/young.txt":  "young",
	})
	old := time.Now().Add(-72 * time.Hour)
	for _, n := range []string{"named.txt", "orphan.txt"} {
		if err := os.Chtimes(filepath.Join(dir, ".myelin/tool-results", n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	storeConversation(t, dir, "c1", spilled("named.txt"))
	out, errOut, code := cli(t, "history", "prune", "--older-than", "2d", "--dry-run", "--workspace", dir)
	if code != exitOK || !strings.HasPrefix(out, "would remove") || !strings.Contains(out, "  .myelin/tool-results/orphan.txt\t6 bytes\t") {
		t.Fatalf("dry run: exit %d, %q, %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".myelin/tool-results/orphan.txt")); err != nil {
		t.Fatalf("a dry run removed the file: %v", err)
	}
	out, errOut, code = cli(t, "history", "prune", "--older-than", "2d", "--workspace", dir)
	if code != exitOK || !strings.HasPrefix(out, "removed 1 file (6 bytes) of ") || !strings.Contains(out, "kept 1 file a conversation names, 1 file newer than 2d") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for name, want := range map[string]bool{"named.txt": true, "orphan.txt": false, "young.txt": true} {
		_, err := os.Stat(filepath.Join(dir, ".myelin/tool-results", name))
		if (err == nil) != want {
			t.Errorf("%s there: %v; want %v", name, err == nil, want)
		}
	}
}

func TestHistoryDeleteAndPruneRefuseBadInputAsUsageErrors(t *testing.T) {
	dir := workspaceWith(t, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "delete"}, "want one conversation ID, got 0 arguments"},
		{[]string{"history", "delete", "a", "b"}, "want one conversation ID, got 2 arguments"},
		{[]string{"history", "prune"}, "want --older-than AGE"},
		{[]string{"history", "prune", "--older-than", "soon"}, `--older-than "soon": give a duration such as 7d`},
		{[]string{"history", "prune", "--older-than", "0s"}, "it must be above zero"},
		{[]string{"history", "prune", "--older-than", "-3d"}, "it must be above zero"},
		{[]string{"history", "prune", "--older-than", "1d", "extra"}, "takes no arguments"},
		{[]string{"history", "show", "c1", "--older-than", "1d"}, "--older-than and --dry-run go with history prune"},
		{[]string{"history", "remove", "c1"}, "want list, show, delete, prune, fork, rewind, undo, redo, branches or switch"},
	} {
		_, errOut, code := cli(t, append(tc.args, "--workspace", dir)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}
