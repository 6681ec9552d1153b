package rewind_test

import (
	"reflect"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
)

// msg is a message of role holding parts.
func msg(role history.Role, parts ...history.Part) history.Message {
	return history.Message{Role: role, Parts: parts}
}

func call(id, name string) history.Part {
	return history.Part{Type: history.ToolCallPart, CallID: id, Name: name}
}

func result(id string, changes ...history.FileChange) history.Part {
	return history.Part{Type: history.ToolResultPart, CallID: id, Text: "done", Files: changes}
}

func text(s string) history.Part { return history.Part{Type: history.TextPart, Text: s} }

// The changes on the results kept for an unfinished round (a process
// killed after a write's result was kept, before its round's message)
// are put back by an undo, and forward again by the redo: a store's
// Rewind and Switch move the kept results with the messages.
func TestUndoAndRedoPutBackTheChangesOfResultsKeptForAnUnfinishedRound(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, map[string]string{"a.txt": "v0"})
			opt := rewind.Options{Files: r.ws}
			err := r.store.Append(r.ctx, "c", msg(history.User, text("edit a, make b")), msg(history.Assistant, call("w1", "workspace--write"), call("w2", "workspace--write")))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.store.Keep(r.ctx, "c", result("w1", r.write("a.txt", str("v0"), "v1")), result("w2", r.write("b.txt", nil, "new"))); err != nil {
				t.Fatal(err)
			}
			r.put("a.txt", "v1")
			r.put("b.txt", "new")
			br, files, err := rewind.Undo(r.ctx, r.store, "c", opt)
			if want := (rewind.Files{Restored: []string{"a.txt"}, Removed: []string{"b.txt"}}); err != nil || !reflect.DeepEqual(files, want) {
				t.Fatalf("undo: %+v, %v; want %+v", files, err, want)
			}
			if got, want := r.disk(), map[string]string{"a.txt": "v0"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the undo the workspace is %v; want %v", got, want)
			}
			if kept, err := r.store.Kept(r.ctx, br.ID); err != nil || len(kept) != 2 {
				t.Fatalf("the branch's kept results: %d, %v; want the 2 moved with the round", len(kept), err)
			}
			id, files, err := rewind.Redo(r.ctx, r.store, "c", opt)
			if want := (rewind.Files{Restored: []string{"a.txt", "b.txt"}}); err != nil || id != br.ID || !reflect.DeepEqual(files, want) {
				t.Fatalf("redo: %s (want %s) %+v, %v; want %+v", id, br.ID, files, err, want)
			}
			if got, want := r.disk(), map[string]string{"a.txt": "v1", "b.txt": "new"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the redo the workspace is %v; want %v", got, want)
			}
		})
	}
}
