package sqlite

// The kept path is still taken where nothing changed but another
// opening's append (from the review of the remake fix, issue 34).

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// keptArray is the address of the first message r keeps of id (nil: none).
func keptArray(r *Store, id string) *history.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settle(id)
	if len(r.read[id]) == 0 {
		return nil
	}
	return &r.read[id][0]
}

func TestKeptReadsAreExtendedInPlaceAfterAnotherOpeningsAppends(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, w *Store) string // returns the id read
		mark  bool
	}{
		{"plain", func(t *testing.T, w *Store) string { return "c" }, false},
		{"fork-no-rows", func(t *testing.T, w *Store) string {
			makeConv(t, w, "f", "c", 8, "", 8)
			return "f"
		}, false},
		{"fork-own-rows", func(t *testing.T, w *Store) string {
			makeConv(t, w, "f", "c", 8, "o", 10)
			return "f"
		}, false},
		{"fork-of-fork-no-rows", func(t *testing.T, w *Store) string {
			makeConv(t, w, "e", "c", 8, "e", 10)
			makeConv(t, w, "g", "e", 10, "", 10)
			return "g"
		}, false},
		{"rewound-below-base (walk)", func(t *testing.T, w *Store) string {
			makeConv(t, w, "b", "c", 5, "b", 8)
			makeConv(t, w, "f", "b", 8, "", 8)
			if _, err := w.Rewind(ctx, "f", 3); err != nil {
				t.Fatal(err)
			}
			return "f"
		}, false},
		{"branch", func(t *testing.T, w *Store) string {
			if _, err := w.Rewind(ctx, "c", 4); err != nil {
				t.Fatal(err)
			}
			return "c~1"
		}, false},
		{"marked-through-bases", func(t *testing.T, w *Store) string {
			makeConv(t, w, "f", "c", 8, "", 8)
			if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			return "f"
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := markedStore(t, 10, 0)
			w := openStore(t, path)
			id := tc.setup(t, w)
			r := openStore(t, path)
			read := func() {
				t.Helper()
				var err error
				if tc.mark {
					_, _, err = r.Marked(ctx, id)
				} else {
					_, err = r.Messages(ctx, id)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			read()
			first := keptArray(r, id)
			if first == nil {
				t.Fatal("nothing kept")
			}
			for i := range 3 {
				if err := w.Append(ctx, id, userText("more")); err != nil {
					t.Fatal(err)
				}
				read()
				if got := keptArray(r, id); got != first {
					t.Fatalf("read %d after another's append: read whole (kept array moved)", i+2)
				}
			}
			readsAsStored(t, r, path, id)
		})
	}
}
