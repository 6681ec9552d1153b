package history

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// stores are the Store implementations every behaviour below holds for,
// each opened fresh with a clock the test moves.
var stores = []struct {
	name string
	open func(t *testing.T, now func() time.Time) Store
}{
	{"sqlite", func(t *testing.T, now func() time.Time) Store {
		s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
		s.now = now
		return s
	}},
	{"memory", func(t *testing.T, now func() time.Time) Store { return &Memory{now: now} }},
}

func TestEveryStoreKeepsTheStoreContract(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			clock := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
			s := st.open(t, func() time.Time { return clock })

			if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get of an unknown id: %v; want ErrNotFound", err)
			}
			if err := s.Create(ctx, Conversation{ID: "c1", System: "be brief"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, Conversation{ID: "c1"}); !errors.Is(err, ErrExists) {
				t.Fatalf("a second Create of c1: %v; want ErrExists", err)
			}
			want := sampleMessages()
			if err := s.Append(ctx, "c1", want...); err != nil {
				t.Fatal(err)
			}
			got, err := s.Messages(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Time.IsZero() {
					t.Fatalf("message %d has no time", i)
				}
				got[i].Time = want[i].Time
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("messages come back as\n%+v\nwant\n%+v", got, want)
			}
			if c, err := s.Get(ctx, "c1"); err != nil || c.System != "be brief" || c.Messages != 3 {
				t.Fatalf("Get = %+v, %v", c, err)
			}

			// one writer at a time
			a, b := NewHolder(), NewHolder()
			a, err = s.Claim(ctx, "c1", a, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var held *HeldError
			if _, err := s.Claim(ctx, "c1", b, time.Minute); !errors.As(err, &held) || held.Holder.Token != a.Token {
				t.Fatalf("a second holder's Claim: %v; want a HeldError naming the first", err)
			}
			if err := s.Append(ctx, "c1", want[0]); !errors.As(err, &held) {
				t.Fatalf("an Append outside the claim while it is held: %v; want a HeldError", err)
			}
			if err := s.Append(Writing(ctx, a), "c1", want[0]); err != nil {
				t.Fatalf("the holder's Append: %v", err)
			}
			if err := s.Keep(Writing(ctx, a), "c1", Part{Type: ToolResultPart, CallID: "k1", Text: "one"}, Part{Type: ToolResultPart, CallID: "k2", Text: "two"}); err != nil {
				t.Fatal(err)
			}
			if kept, err := s.Kept(ctx, "c1"); err != nil || len(kept) != 2 {
				t.Fatalf("Kept = %v, %v", kept, err)
			}
			if err := s.Append(Writing(ctx, a), "c1", want[2]); err != nil { // a message of results
				t.Fatal(err)
			}
			if kept, _ := s.Kept(ctx, "c1"); len(kept) != 0 {
				t.Fatalf("a message of results left %d kept results", len(kept))
			}

			// a lease that ran out is taken over; the old holder's writes are refused
			clock = clock.Add(2 * time.Minute)
			if b, err = s.Claim(ctx, "c1", b, time.Minute); err != nil {
				t.Fatalf("taking over a lapsed claim: %v", err)
			}
			if err := s.Append(Writing(ctx, a), "c1", want[0]); !errors.Is(err, ErrClaimLost) {
				t.Fatalf("the old holder's Append: %v; want ErrClaimLost", err)
			}
			if err := s.Renew(ctx, "c1", a, time.Minute); !errors.Is(err, ErrClaimLost) {
				t.Fatalf("the old holder's Renew: %v; want ErrClaimLost", err)
			}
			if err := s.Release(ctx, "c1", b); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, "c1", want[0]); err != nil {
				t.Fatalf("an Append once the claim is released: %v", err)
			}

			if err := s.Create(ctx, Conversation{ID: "c2"}); err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(time.Second)
			if err := s.Append(ctx, "c1", want[0]); err != nil {
				t.Fatal(err)
			}
			list, err := s.List(ctx)
			if err != nil || len(list) != 2 || list[0].ID != "c1" {
				t.Fatalf("List = %+v, %v; want c1 (updated last) first", list, err)
			}
		})
	}
}
