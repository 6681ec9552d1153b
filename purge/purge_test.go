package purge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/purge"
	"github.com/myelin-run/myelin/workspace"
)

// setup is a workspace with the files under .myelin/tool-results/ given
// (name: content), each last modified at old, and an empty store.
func setup(t *testing.T, old time.Time, names ...string) (*workspace.Workspace, string, *history.Memory) {
	t.Helper()
	dir := t.TempDir()
	results := filepath.Join(dir, ".myelin", "tool-results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(results, n)
		if err := os.WriteFile(p, []byte("bytes of "+n), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, results, &history.Memory{}
}

// conversation makes conversation id (a child of parent when set) holding
// a result spilled to spill and a text naming named.
func conversation(t *testing.T, s *history.Memory, id, parent, spill, named string) {
	t.Helper()
	ctx := context.Background()
	c := history.Conversation{ID: id, Parent: parent}
	if parent != "" {
		c.ParentCall = "call_p"
	}
	if err := s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	msgs := []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	if spill != "" {
		msgs = append(msgs, history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c1", Text: "head…", SpillPath: ".myelin/tool-results/" + spill}}})
	}
	if named != "" {
		msgs = append(msgs, history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "The image is in\n.myelin/tool-results/" + named + "."}}})
	}
	if err := s.Append(ctx, id, msgs...); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, dir, name string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

func TestDeletingAConversationRemovesTheFilesItAloneNames(t *testing.T) {
	ctx := context.Background()
	ws, dir, s := setup(t, time.Now(), "mine.txt", "mine-1.png", "both.txt", "theirs.txt")
	conversation(t, s, "a", "", "mine.txt", "mine-1.png")
	if err := s.Append(ctx, "a", history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and .myelin/tool-results/both.txt and .myelin/tool-results/never-written.txt"}}}); err != nil {
		t.Fatal(err)
	}
	conversation(t, s, "b", "", "theirs.txt", "")
	conversation(t, s, "child", "a", "", "both.txt")
	if _, err := s.AddRequest(ctx, "a", history.SentRequest{Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	got, err := purge.Conversation(ctx, s, ws, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != 4 || got.Requests != 1 {
		t.Errorf("counted %d messages, %d requests; want 4 and 1", got.Messages, got.Requests)
	}
	if want := []string{".myelin/tool-results/mine-1.png", ".myelin/tool-results/mine.txt"}; !slices.Equal(got.Files, want) {
		t.Errorf("removed %q; want %q", got.Files, want)
	}
	if want := []string{".myelin/tool-results/both.txt"}; !slices.Equal(got.Shared, want) {
		t.Errorf("left as shared %q; want %q (its subagent's conversation names it too)", got.Shared, want)
	}
	if want := []string{".myelin/tool-results/never-written.txt"}; !slices.Equal(got.Missing, want) {
		t.Errorf("missing %q; want %q", got.Missing, want)
	}
	if !slices.Equal(got.Children, []string{"child"}) {
		t.Errorf("children %q; want [child], left in place", got.Children)
	}
	for name, want := range map[string]bool{"mine.txt": false, "mine-1.png": false, "both.txt": true, "theirs.txt": true} {
		if exists(t, dir, name) != want {
			t.Errorf("%s there: %v; want %v", name, !want, want)
		}
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("the conversation after its delete: %v; want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "child"); err != nil {
		t.Errorf("its child: %v; want it kept", err)
	}
}

func TestADeleteRefusedRemovesNoFile(t *testing.T) {
	ctx := context.Background()
	ws, dir, s := setup(t, time.Now(), "mine.txt")
	conversation(t, s, "a", "", "mine.txt", "")
	h := history.NewHolder()
	if _, err := s.Claim(ctx, "a", h, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := purge.Conversation(ctx, s, ws, "a")
	var held *history.HeldError
	if !errors.As(err, &held) || held.Holder.Token != h.Token {
		t.Fatalf("deleting a conversation whose turn runs: %v; want a HeldError naming its holder", err)
	}
	if !exists(t, dir, "mine.txt") {
		t.Error("its file was removed though the delete was refused")
	}
	if _, err := purge.Conversation(ctx, s, ws, "nowhere"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("deleting an unknown conversation: %v; want ErrNotFound", err)
	}
}

func TestPruneRemovesOldFilesNoConversationNames(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ws, dir, s := setup(t, now.Add(-48*time.Hour), "orphan.txt", "named.txt", "kept-result.txt")
	if err := os.WriteFile(filepath.Join(dir, "young.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "young.txt"), now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	conversation(t, s, "a", "", "named.txt", "")
	// a result kept ahead of its round (a turn running) names its file too
	if err := s.Keep(ctx, "a", history.Part{Type: history.ToolResultPart, CallID: "c9", Text: "x", SpillPath: ".myelin/tool-results/kept-result.txt"}); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-24 * time.Hour)
	dry, err := purge.Prune(ctx, s, ws, cutoff, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Removed) != 1 || dry.Removed[0].Path != ".myelin/tool-results/orphan.txt" || !exists(t, dir, "orphan.txt") {
		t.Fatalf("dry run: %+v; want orphan.txt reported and left in place", dry)
	}
	got, err := purge.Prune(ctx, s, ws, cutoff, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Removed) != 1 || got.Removed[0].Path != ".myelin/tool-results/orphan.txt" || got.Bytes != int64(len("bytes of orphan.txt")) {
		t.Errorf("removed %+v (%d bytes); want orphan.txt alone", got.Removed, got.Bytes)
	}
	if got.Named != 2 || got.Young != 1 || !slices.Equal(got.Other, []string{".myelin/tool-results/link.txt"}) {
		t.Errorf("kept %d named, %d young, other %q; want 2, 1 and the link", got.Named, got.Young, got.Other)
	}
	for name, want := range map[string]bool{"orphan.txt": false, "named.txt": true, "kept-result.txt": true, "young.txt": true, "link.txt": true} {
		if exists(t, dir, name) != want {
			t.Errorf("%s there: %v; want %v", name, !want, want)
		}
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("the link's target: %v", err)
	}
}

func TestDeletingASubagentsConversationKeepsTheFilesItsParentNames(t *testing.T) {
	ctx := context.Background()
	ws, dir, s := setup(t, time.Now(), "sub.txt", "quoted.txt")
	conversation(t, s, "parent", "", "", "quoted.txt")
	conversation(t, s, "sub", "parent", "sub.txt", "quoted.txt")
	got, err := purge.Conversation(ctx, s, ws, "sub")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Files, []string{".myelin/tool-results/sub.txt"}) || !slices.Equal(got.Shared, []string{".myelin/tool-results/quoted.txt"}) {
		t.Errorf("removed %q, kept %q; want sub.txt removed and quoted.txt (its parent names it) kept", got.Files, got.Shared)
	}
	if !exists(t, dir, "quoted.txt") || exists(t, dir, "sub.txt") {
		t.Error("the files after the delete are not as reported")
	}
}

// A fork's first messages are its base's, and so are the files they name:
// deleting the fork removes only the files its own messages name.
func TestDeletingAForkKeepsTheFilesItsBaseNames(t *testing.T) {
	ctx := context.Background()
	ws, dir, s := setup(t, time.Now(), "base.txt", "fork.txt")
	conversation(t, s, "base", "", "base.txt", "")
	c, err := s.Get(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, history.Conversation{ID: "fork", Base: "base", BaseAt: c.Messages}); err != nil {
		t.Fatal(err)
	}
	spilled := history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "c2", Text: "head…", SpillPath: ".myelin/tool-results/fork.txt"}}}
	if err := s.Append(ctx, "fork", spilled); err != nil {
		t.Fatal(err)
	}
	got, err := purge.Conversation(ctx, s, ws, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Files, []string{".myelin/tool-results/fork.txt"}) {
		t.Errorf("removed %q; want only fork.txt, the file the fork's own messages name", got.Files)
	}
	if !slices.Equal(got.Shared, []string{".myelin/tool-results/base.txt"}) {
		t.Errorf("kept as shared %q; want base.txt, which the base names", got.Shared)
	}
	if !exists(t, dir, "base.txt") || exists(t, dir, "fork.txt") {
		t.Error("the files after the delete are not as reported")
	}
}
