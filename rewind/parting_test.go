package rewind_test

import (
	"context"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
	"github.com/myelin-run/myelin/rewind"
)

// Where a conversation and each of its branches part, and a fork and its
// base, is the same read from the records (PartsAt) as from the messages
// (Parting), after every step of random runs of appends, forks, rewinds
// and switches, on every store.
func TestPartsAtAgreesWithPartingOnEveryStore(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 4; seed++ {
		steps, _ := storetest.Steps(seed, 30)
		for _, s := range stores(t) {
			if err := s.store.Create(ctx, history.Conversation{ID: storetest.Root}); err != nil {
				t.Fatal(err)
			}
			ids := []string{storetest.Root}
			for k, st := range steps {
				if err := st.Do(ctx, s.store); err != nil {
					t.Fatalf("%s seed %d step %d (%s): %v", s.name, seed, k, st, err)
				}
				if st.Op == "fork" || st.Op == "rewind" {
					ids = append(ids, map[string]string{"fork": st.ID, "rewind": st.Other}[st.Op])
				}
				for _, id := range ids {
					c, err := s.store.Get(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					other := c.BranchOf
					if other == "" {
						other = c.Base
					}
					if other == "" {
						continue
					}
					o, err := s.store.Get(ctx, other)
					if err != nil {
						t.Fatal(err)
					}
					got, err := rewind.PartsAt(ctx, s.store, c, o)
					if err != nil {
						t.Fatal(err)
					}
					cm, err := s.store.Messages(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					om, err := s.store.Messages(ctx, other)
					if err != nil {
						t.Fatal(err)
					}
					if want := rewind.Parting(cm, om); got != want {
						t.Fatalf("%s seed %d after step %d (%s): %s and %s part at %d by their records, at %d by their messages", s.name, seed, k, st, id, other, got, want)
					}
				}
			}
		}
	}
}
