package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// childrenLinked: a conversation a tool call started (a subagent's) keeps
// its link to that call — Parent and ParentCall — as Create was given it,
// read back by Get, List and another opening, and found from the parent's
// side by Children, oldest first, whether the store answers it itself
// (history.Family) or history.Children reads its List.
func childrenLinked(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("p")
	e.conversation("other")
	for i, c := range []history.Conversation{
		{ID: "c1", System: "child", Parent: "p", ParentCall: "call_1", Created: t0.Add(time.Second)},
		{ID: "c2", System: "child", Parent: "p", ParentCall: "call_2", Created: t0.Add(2 * time.Second)},
		{ID: "c3", System: "child", Parent: "other", ParentCall: "call_1", Created: t0.Add(3 * time.Second)},
	} {
		if i > 0 {
			e.clock.Add(time.Second)
		}
		if err := e.s.Create(e.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	other := e.open()
	got, err := other.Get(e.ctx, "c2")
	if err != nil || got.Parent != "p" || got.ParentCall != "call_2" {
		t.Fatalf("Get(c2) = %+v, %v; want parent p, call call_2", got, err)
	}
	if got, err := other.Get(e.ctx, "p"); err != nil || got.Parent != "" || got.ParentCall != "" {
		t.Fatalf("Get(p) = %+v, %v; want no parent", got, err)
	}
	list, err := other.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]string{}
	for _, c := range list {
		linked[c.ID] = c.Parent + "/" + c.ParentCall
	}
	if linked["c1"] != "p/call_1" || linked["c3"] != "other/call_1" || linked["p"] != "/" {
		t.Fatalf("List's links: %v", linked)
	}
	if _, ok := other.(history.Family); !ok {
		t.Errorf("%T does not implement history.Family", other)
	}
	for name, store := range map[string]history.Store{"the store's own": other, "read from List": listOnly{other}} {
		for parent, want := range map[string][]string{"p": {"c1", "c2"}, "other": {"c3"}, "c1": nil, "nowhere": nil} {
			kids, err := history.Children(e.ctx, store, parent)
			if err != nil {
				t.Fatalf("%s: Children(%s): %v", name, parent, err)
			}
			var ids []string
			for _, k := range kids {
				ids = append(ids, k.ID)
				if k.Parent != parent {
					t.Errorf("%s: Children(%s) holds %s, whose parent is %q", name, parent, k.ID, k.Parent)
				}
			}
			if len(ids) != len(want) || (len(ids) > 0 && (ids[0] != want[0] || ids[len(ids)-1] != want[len(want)-1])) {
				t.Errorf("%s: Children(%s) = %v; want %v", name, parent, ids, want)
			}
		}
	}
}

// listOnly is a Store that answers no Children of its own.
type listOnly struct{ history.Store }

// linkRefused: Create refuses a link no store may take — a parent that is
// not in the store, a parent call without a parent, a conversation its
// own parent — saying which, and makes nothing.
func linkRefused(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("p")
	for _, tc := range []struct {
		c     history.Conversation
		want  string
		found bool // wraps ErrNotFound
	}{
		{history.Conversation{ID: "c", Parent: "gone", ParentCall: "call_1"}, "its parent conversation gone", true},
		{history.Conversation{ID: "c", ParentCall: "call_1"}, `names the parent call "call_1" but no parent conversation`, false},
		{history.Conversation{ID: "c", Parent: "c"}, "names itself as its parent", false},
	} {
		err := e.s.Create(e.ctx, tc.c)
		if !contains(err, tc.want) || !contains(err, "creating conversation c") {
			t.Errorf("Create(%+v) = %v; want an error naming c and saying %q", tc.c, err, tc.want)
		}
		if tc.found != errors.Is(err, history.ErrNotFound) {
			t.Errorf("Create(%+v) = %v; wraps ErrNotFound: %v, want %v", tc.c, err, !tc.found, tc.found)
		}
		if _, err := e.open().Get(context.Background(), "c"); !errors.Is(err, history.ErrNotFound) {
			t.Fatalf("after a refused Create, Get(c) = %v; want ErrNotFound", err)
		}
	}
}

// linkDamaged: a record whose link was changed after it was made fails
// its checksum like any other damage.
func linkDamaged(t *testing.T, s Subject) {
	if s.Damage == nil {
		t.Skip("the store has no tables to damage")
	}
	e := s.env(t)
	e.conversation("p")
	e.conversation("q")
	if err := e.s.Create(e.ctx, history.Conversation{ID: "c", Parent: "p", ParentCall: "call_1"}); err != nil {
		t.Fatal(err)
	}
	s.Damage(t, e.s, `UPDATE conversations SET parent = 'q' WHERE id = 'c'`)
	if _, err := e.open().Get(e.ctx, "c"); !errors.Is(err, history.ErrDamaged) || !contains(err, "parent") {
		t.Fatalf("Get of a record whose parent changed = %v; want ErrDamaged saying so", err)
	}
}
