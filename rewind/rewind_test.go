package rewind_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/rewind"
	"github.com/myelin-run/myelin/workspace"
)

var _ rewind.Workspace = (*workspace.Workspace)(nil)

// rig is a conversation "c" in a store, and a workspace on disk.
type rig struct {
	t     *testing.T
	ctx   context.Context
	store history.Store
	dir   string
	ws    *workspace.Workspace
	calls int
}

func newRig(t *testing.T, store history.Store, disk map[string]string) *rig {
	t.Helper()
	r := &rig{t: t, ctx: context.Background(), store: store, dir: t.TempDir()}
	for name, content := range disk {
		r.put(name, content)
	}
	ws, err := workspace.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r.ws = ws
	if err := store.Create(r.ctx, history.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// put writes a file of the workspace, as someone else would.
func (r *rig) put(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// disk is the workspace's files, but myelin's own.
func (r *rig) disk() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(r.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(r.dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// version keeps content in the store and returns its hash.
func (r *rig) version(content string) string {
	r.t.Helper()
	h := history.BlobHash([]byte(content))
	if _, err := r.store.(history.Blobs).PutBlob(r.ctx, "c", history.FileVersionPath(h), []byte(content)); err != nil {
		r.t.Fatal(err)
	}
	return h
}

// write is a change a write tool made: from (nil: no file) to to, its
// versions kept; the file on disk is left to the test.
func (r *rig) write(path string, from *string, to string) history.FileChange {
	c := history.FileChange{Path: path, After: r.version(to)}
	if from == nil {
		c.Created = true
	} else {
		c.Before = r.version(*from)
	}
	return c
}

func str(s string) *string { return &s }

// turn appends a prompt, a call whose result records changes, and an
// answer.
func (r *rig) turn(prompt string, changes ...history.FileChange) {
	r.t.Helper()
	r.calls++
	id := "call" + string(rune('0'+r.calls))
	err := r.store.Append(r.ctx, "c",
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: prompt}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "workspace--write"}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: "written", Files: changes}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done: " + prompt}}},
	)
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) count(id string) int {
	r.t.Helper()
	c, err := r.store.Get(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return c.Messages
}

// A rewind with files puts back each file the tools changed after the
// point as it was there, when it is as the tools left it; else it leaves
// it and says why.
func TestRewindPutsBackTheFilesTheToolsChangedAfterThePoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before, the files on disk at the start; turns makes the
		// conversation (a turn is 4 messages) and may change the disk
		before map[string]string
		turns  func(r *rig)
		at     int
		want   rewind.Files
		disk   map[string]string
	}{{
		name:   "an edited file goes back to its content before",
		before: map[string]string{"a.txt": "v0"},
		turns: func(r *rig) {
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.put("a.txt", "v1")
		},
		want: rewind.Files{Restored: []string{"a.txt"}},
		disk: map[string]string{"a.txt": "v0"},
	}, {
		name: "a created file is removed",
		turns: func(r *rig) {
			r.turn("make b", r.write("dir/b.txt", nil, "new"))
			r.put("dir/b.txt", "new")
		},
		want: rewind.Files{Removed: []string{"dir/b.txt"}},
		disk: map[string]string{},
	}, {
		name:   "a file changed twice goes back to before the first change",
		before: map[string]string{"a.txt": "v0"},
		turns: func(r *rig) {
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.turn("edit a again", r.write("a.txt", str("v1"), "v2"))
			r.put("a.txt", "v2")
		},
		want: rewind.Files{Restored: []string{"a.txt"}},
		disk: map[string]string{"a.txt": "v0"},
	}, {
		name:   "a file changed before the point is left",
		before: map[string]string{"a.txt": "v0", "b.txt": "b0"},
		turns: func(r *rig) {
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.turn("edit b", r.write("b.txt", str("b0"), "b1"))
			r.put("a.txt", "v1")
			r.put("b.txt", "b1")
		},
		at:   4,
		want: rewind.Files{Restored: []string{"b.txt"}},
		disk: map[string]string{"a.txt": "v1", "b.txt": "b0"},
	}, {
		name:   "a file changed since by someone else is left as it is",
		before: map[string]string{"a.txt": "v0"},
		turns: func(r *rig) {
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.put("a.txt", "mine now")
		},
		want: rewind.Files{Skipped: []rewind.Skipped{{Path: "a.txt", Why: "changed since by someone else: its content is not what the tools last wrote"}}},
		disk: map[string]string{"a.txt": "mine now"},
	}, {
		name: "a created file removed since by someone else is left gone",
		turns: func(r *rig) {
			r.turn("make b", r.write("b.txt", nil, "new"))
		},
		want: rewind.Files{Skipped: []rewind.Skipped{{Path: "b.txt", Why: "changed since by someone else: the tools last left it in place, and it is gone"}}},
		disk: map[string]string{},
	}, {
		name:   "a file whose earlier content was too large to keep is left",
		before: map[string]string{"a.txt": "huge"},
		turns: func(r *rig) {
			r.turn("edit a", history.FileChange{Path: "a.txt", After: r.version("small")})
			r.put("a.txt", "small")
		},
		want: rewind.Files{Skipped: []rewind.Skipped{{Path: "a.txt", Why: "its content to put back was over 16 MiB, too large to have been kept: it cannot be put back"}}},
		disk: map[string]string{"a.txt": "small"},
	}, {
		name:   "a file whose last content was too large to keep cannot be checked, so is left",
		before: map[string]string{"a.txt": "v0"},
		turns: func(r *rig) {
			r.turn("edit a", history.FileChange{Path: "a.txt", Before: r.version("v0")})
			r.put("a.txt", "huge")
		},
		want: rewind.Files{Skipped: []rewind.Skipped{{Path: "a.txt", Why: "the content the tools last wrote was over 16 MiB, too large to have been kept, so whether it was changed since cannot be checked"}}},
		disk: map[string]string{"a.txt": "huge"},
	}, {
		name:   "one file left does not keep the others from going back",
		before: map[string]string{"a.txt": "v0", "b.txt": "b0"},
		turns: func(r *rig) {
			r.turn("edit both", r.write("a.txt", str("v0"), "v1"), r.write("b.txt", str("b0"), "b1"), r.write("c.txt", nil, "c1"))
			r.put("a.txt", "theirs")
			r.put("b.txt", "b1")
			r.put("c.txt", "c1")
		},
		want: rewind.Files{Restored: []string{"b.txt"}, Removed: []string{"c.txt"},
			Skipped: []rewind.Skipped{{Path: "a.txt", Why: "changed since by someone else: its content is not what the tools last wrote"}}},
		disk: map[string]string{"a.txt": "theirs", "b.txt": "b0"},
	}} {
		for _, st := range stores(t) {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				r := newRig(t, st.store, tc.before)
				tc.turns(r)
				n := r.count("c")
				br, files, err := rewind.Rewind(r.ctx, r.store, "c", tc.at, rewind.Options{Files: r.ws})
				if err != nil {
					t.Fatalf("rewind: %v", err)
				}
				if !reflect.DeepEqual(files, tc.want) {
					t.Errorf("files:\n got %+v\nwant %+v", files, tc.want)
				}
				if got := r.disk(); !reflect.DeepEqual(got, tc.disk) {
					t.Errorf("the workspace after the rewind:\n got %v\nwant %v", got, tc.disk)
				}
				if r.count("c") != tc.at || br.BranchOf != "c" || r.count(br.ID) != n {
					t.Errorf("the conversation holds %d messages (want %d), its branch %s of %q %d (want %d)", r.count("c"), tc.at, br.ID, br.BranchOf, r.count(br.ID), n)
				}
			})
		}
	}
}

// Without Options.Files, a rewind changes no file.
func TestRewindWithoutFilesLeavesTheWorkspaceAlone(t *testing.T) {
	r := newRig(t, &history.Memory{}, map[string]string{"a.txt": "v0"})
	r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
	r.put("a.txt", "v1")
	if _, files, err := rewind.Rewind(r.ctx, r.store, "c", 0, rewind.Options{}); err != nil || !reflect.DeepEqual(files, rewind.Files{}) {
		t.Fatalf("rewind: %+v, %v", files, err)
	}
	if got := r.disk()["a.txt"]; got != "v1" {
		t.Fatalf("a.txt holds %q after a rewind without files; want it left at v1", got)
	}
}

// A rewind or a switch under a running turn fails with the store's
// HeldError, and touches no file.
func TestARewindUnderARunningTurnFailsAndTouchesNoFile(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, map[string]string{"a.txt": "v0"})
			r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
			r.put("a.txt", "v1")
			if _, _, err := rewind.Rewind(r.ctx, r.store, "c", 0, rewind.Options{}); err != nil {
				t.Fatal(err)
			}
			r.turn("edit a again", r.write("a.txt", str("v0"), "v2"))
			r.put("a.txt", "v2")
			if _, err := r.store.Claim(r.ctx, "c", history.NewHolder(), time.Minute); err != nil {
				t.Fatal(err)
			}
			var held *history.HeldError
			if _, _, err := rewind.Rewind(r.ctx, r.store, "c", 0, rewind.Options{Files: r.ws}); !errors.As(err, &held) {
				t.Errorf("rewind under a claim: %v; want a HeldError", err)
			}
			if _, _, err := rewind.Undo(r.ctx, r.store, "c", rewind.Options{Files: r.ws}); !errors.As(err, &held) {
				t.Errorf("undo under a claim: %v; want a HeldError", err)
			}
			if _, err := rewind.Switch(r.ctx, r.store, "c", "c~1", rewind.Options{Files: r.ws}); !errors.As(err, &held) {
				t.Errorf("switch under a claim: %v; want a HeldError", err)
			}
			if got := r.disk()["a.txt"]; got != "v2" || r.count("c") != 4 {
				t.Fatalf("after refused rewinds a.txt holds %q (want v2), c %d messages (want 4)", got, r.count("c"))
			}
		})
	}
}

// Undo takes back the last turn and its files, redo brings both back;
// undoing and redoing again does not pile up branches.
func TestUndoTakesBackTheLastTurnAndRedoBringsItBack(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, nil)
			opt := rewind.Options{Files: r.ws}
			if _, _, err := rewind.Undo(r.ctx, r.store, "c", opt); !errors.Is(err, rewind.ErrNothingToUndo) {
				t.Fatalf("undo of an empty conversation: %v; want ErrNothingToUndo", err)
			}
			r.turn("make a", r.write("a.txt", nil, "v1"))
			r.turn("edit a", r.write("a.txt", str("v1"), "v2"))
			r.put("a.txt", "v2")
			if _, _, err := rewind.Redo(r.ctx, r.store, "c", opt); !errors.Is(err, rewind.ErrNothingToRedo) {
				t.Fatalf("redo with nothing undone: %v; want ErrNothingToRedo", err)
			}
			for round := 0; round < 2; round++ {
				br, files, err := rewind.Undo(r.ctx, r.store, "c", opt)
				if err != nil || !reflect.DeepEqual(files, rewind.Files{Restored: []string{"a.txt"}}) {
					t.Fatalf("undo %d: %+v, %v", round, files, err)
				}
				if r.count("c") != 4 || br.Messages != 8 || r.disk()["a.txt"] != "v1" {
					t.Fatalf("after undo %d: c %d messages (want 4), branch %s %d (want 8), a.txt %q (want v1)", round, r.count("c"), br.ID, br.Messages, r.disk()["a.txt"])
				}
				id, files, err := rewind.Redo(r.ctx, r.store, "c", opt)
				if err != nil || id != br.ID || !reflect.DeepEqual(files, rewind.Files{Restored: []string{"a.txt"}}) {
					t.Fatalf("redo %d: %s (want %s) %+v, %v", round, id, br.ID, files, err)
				}
				if r.count("c") != 8 || r.disk()["a.txt"] != "v2" {
					t.Fatalf("after redo %d: c %d messages (want 8), a.txt %q (want v2)", round, r.count("c"), r.disk()["a.txt"])
				}
			}
			if brs, err := r.store.(history.Brancher).Branches(r.ctx, "c"); err != nil || len(brs) != 1 {
				t.Fatalf("after two undos and redos, the branches: %v, %v; want one", brs, err)
			}
			// two undos take back both turns, the file created by the
			// first removed; one redo brings back the first turn only
			for _, want := range []int{4, 0} {
				if _, _, err := rewind.Undo(r.ctx, r.store, "c", opt); err != nil || r.count("c") != want {
					t.Fatalf("undo to %d: %v, c %d messages", want, err, r.count("c"))
				}
			}
			if _, ok := r.disk()["a.txt"]; ok {
				t.Fatal("a.txt, created by the first turn, is still there after both are undone")
			}
			if _, _, err := rewind.Redo(r.ctx, r.store, "c", opt); err != nil || r.count("c") != 4 || r.disk()["a.txt"] != "v1" {
				t.Fatalf("redo of the first turn: %v, c %d messages (want 4), a.txt %q (want v1)", err, r.count("c"), r.disk()["a.txt"])
			}
		})
	}
}

// A switch takes back the files of what the conversation held after the
// point where it parts from the branch, and brings those of the branch;
// a switch back undoes it.
func TestSwitchPutsTheFilesOfBothSidesAsTheBranchHasThem(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, map[string]string{"keep.txt": "k0"})
			opt := rewind.Options{Files: r.ws}
			r.turn("first", r.write("keep.txt", str("k0"), "k1"))
			r.turn("a", r.write("a.txt", nil, "a-one"), r.write("keep.txt", str("k1"), "k2"))
			r.put("keep.txt", "k2")
			r.put("a.txt", "a-one")
			br, _, err := rewind.Rewind(r.ctx, r.store, "c", 4, opt)
			if err != nil {
				t.Fatal(err)
			}
			r.turn("b", r.write("a.txt", nil, "a-two"), r.write("b.txt", nil, "b-two"))
			r.put("a.txt", "a-two")
			r.put("b.txt", "b-two")
			files, err := rewind.Switch(r.ctx, r.store, "c", br.ID, opt)
			want := rewind.Files{Restored: []string{"a.txt", "keep.txt"}, Removed: []string{"b.txt"}}
			if err != nil || !reflect.DeepEqual(files, want) {
				t.Fatalf("switch: %+v, %v; want %+v", files, err, want)
			}
			if got, want := r.disk(), map[string]string{"keep.txt": "k2", "a.txt": "a-one"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the switch the workspace is %v; want %v", got, want)
			}
			r.put("keep.txt", "someone's")
			files, err = rewind.Switch(r.ctx, r.store, "c", br.ID, opt)
			want = rewind.Files{Restored: []string{"a.txt", "b.txt"}, Skipped: []rewind.Skipped{{Path: "keep.txt", Why: "changed since by someone else: its content is not what the tools last wrote"}}}
			if err != nil || !reflect.DeepEqual(files, want) {
				t.Fatalf("switch back: %+v, %v; want %+v", files, err, want)
			}
			if got, want := r.disk(), map[string]string{"keep.txt": "someone's", "a.txt": "a-two", "b.txt": "b-two"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after the switch back the workspace is %v; want %v", got, want)
			}
			if _, err := rewind.Switch(r.ctx, r.store, "c", "c", opt); !errors.Is(err, history.ErrNotBranch) {
				t.Fatalf("switch to itself: %v; want ErrNotBranch", err)
			}
		})
	}
}

// A file a put-back cannot write is reported, the conversation rewound
// all the same.
func TestAPutBackThatFailsIsSkippedAndTheRewindStands(t *testing.T) {
	r := newRig(t, &history.Memory{}, map[string]string{"a.txt": "v0"})
	r.turn("edit a", r.write("a.txt", str("v0"), "v1"))
	r.put("a.txt", "v1")
	ws := failing{r.ws}
	_, files, err := rewind.Rewind(r.ctx, r.store, "c", 0, rewind.Options{Files: ws})
	if err != nil || len(files.Skipped) != 1 || !strings.Contains(files.Skipped[0].Why, "putting it back failed (the conversation was rewound all the same): disk full") {
		t.Fatalf("rewind: %+v, %v; want a.txt skipped saying the put-back failed", files, err)
	}
	if r.count("c") != 0 {
		t.Fatalf("c holds %d messages; want the rewind to stand", r.count("c"))
	}
}

type failing struct{ *workspace.Workspace }

func (failing) PutBack(string, []byte, bool) error { return errors.New("disk full") }

// A store that keeps no branches is a clear error.
func TestARewindOnAStoreWithoutBranchesSaysSo(t *testing.T) {
	var s history.Store = struct{ history.Store }{&history.Memory{}}
	if _, _, err := rewind.Rewind(context.Background(), s, "c", 0, rewind.Options{}); !errors.Is(err, rewind.ErrNoBranches) {
		t.Fatalf("rewind: %v; want ErrNoBranches", err)
	}
}

// A fork rewound into the messages it shares with its base puts back the
// files the tools changed in those too (they are the fork's past), and
// leaves the base as it was.
func TestAForkRewoundIntoWhatItSharesPutsBackThoseFilesToo(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.store, nil)
			r.turn("make a", r.write("a.txt", nil, "v1"))
			r.turn("edit a", r.write("a.txt", str("v1"), "v2"))
			f, err := r.store.(history.Brancher).Fork(r.ctx, history.Conversation{ID: "f", Base: "c", BaseAt: 8})
			if err != nil {
				t.Fatal(err)
			}
			r.put("a.txt", "v2")
			if _, files, err := rewind.Rewind(r.ctx, r.store, f.ID, 4, rewind.Options{Files: r.ws}); err != nil || !reflect.DeepEqual(files, rewind.Files{Restored: []string{"a.txt"}}) {
				t.Fatalf("rewind of the fork to 4: %+v, %v", files, err)
			}
			if r.disk()["a.txt"] != "v1" || r.count("f") != 4 || r.count("c") != 8 {
				t.Fatalf("a.txt %q (want v1), the fork %d messages (want 4), its base %d (want 8)", r.disk()["a.txt"], r.count("f"), r.count("c"))
			}
		})
	}
}
