package rewind_test

import (
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// An undo puts back the files the subagents of the turn changed — a
// subagent's (agent--delegate's child), its own subagent's, a forked
// subagent's — each at the place of its delegating call's result, and
// not the changes of the messages a fork shares with its parent, which
// are the parent's, from before the call.
func TestUndoPutsBackTheFilesTheTurnsSubagentsChanged(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, map[string]string{"a.txt": "v0"})
			b := r.store.(history.Brancher)
			opt := rewind.Options{Files: r.ws}
			// the first turn, not undone, edits a.txt
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.put("a.txt", "v1")
			// the second: two subagents, then the parent edits what the
			// first one made
			if err := r.store.Append(r.ctx, "c", msg(history.User, text("delegate")), msg(history.Assistant, call("d1", "agent--delegate"), call("d2", "agent--delegate"))); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Create(r.ctx, history.Conversation{ID: "s1", Parent: "c", ParentCall: "d1"}); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Append(r.ctx, "s1", msg(history.User, text("make x")),
				msg(history.Assistant, call("w", "workspace--write"), call("sd", "agent--delegate")),
				msg(history.User, result("w", r.write("x.txt", nil, "child")), result("sd")),
				msg(history.Assistant, text("made"))); err != nil {
				t.Fatal(err)
			}
			// the subagent's own subagent makes g.txt
			if err := r.store.Create(r.ctx, history.Conversation{ID: "s1g", Parent: "s1", ParentCall: "sd"}); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Append(r.ctx, "s1g", msg(history.User, text("make g")), msg(history.Assistant, call("w", "workspace--write")), msg(history.User, result("w", r.write("g.txt", nil, "grand"))), msg(history.Assistant, text("made"))); err != nil {
				t.Fatal(err)
			}
			// a forked subagent shares c's first 5 messages, up to its
			// delegating call's (as agent--delegate forks), the first
			// turn's edit of a.txt among them, and makes f.txt
			if _, err := b.Fork(r.ctx, history.Conversation{ID: "s2", Base: "c", BaseAt: 5, Parent: "c", ParentCall: "d2"}); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Append(r.ctx, "s2", msg(history.User, text("make f")), msg(history.Assistant, call("w", "workspace--write")), msg(history.User, result("w", r.write("f.txt", nil, "forked"))), msg(history.Assistant, text("made"))); err != nil {
				t.Fatal(err)
			}
			if err := r.store.Append(r.ctx, "c",
				msg(history.User, result("d1"), result("d2")),
				msg(history.Assistant, call("e", "workspace--edit")),
				msg(history.User, result("e", r.write("x.txt", str("child"), "parent"))),
				msg(history.Assistant, text("done"))); err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"x.txt": "parent", "g.txt": "grand", "f.txt": "forked"} {
				r.put(name, content)
			}
			_, files, err := rewind.Undo(r.ctx, r.store, "c", opt)
			if want := (rewind.Files{Removed: []string{"f.txt", "g.txt", "x.txt"}}); err != nil || !reflect.DeepEqual(files, want) {
				t.Fatalf("undo: %+v, %v; want %+v", files, err, want)
			}
			if got, want := r.disk(), map[string]string{"a.txt": "v1"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the undo the workspace is %v; want %v (a.txt as the first turn, before the fork, left it)", got, want)
			}
		})
	}
}
