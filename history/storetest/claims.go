package storetest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
)

// elsewhere is a holder on another host: alive until its lease runs out.
func elsewhere() history.Holder {
	h := history.NewHolder()
	h.Host, h.Node, h.PID = "other-host", "other-node", 4242
	return h
}

// noSuchPID is above Linux's largest pid (2^22).
const noSuchPID = 1<<22 + 1

func secondHolderRefused(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	first, err := e.s.Claim(e.ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil || first.Since.IsZero() {
		t.Fatalf("claim %+v, %v", first, err)
	}
	_, err = e.s.Claim(e.ctx, "c", history.NewHolder(), history.DefaultLease)
	var held *history.HeldError
	if !errors.As(err, &held) || held.Holder.Token != first.Token || held.Conversation != "c" {
		t.Fatalf("a second holder's Claim: %v; want a HeldError naming the first", err)
	}
	for _, want := range []string{"conversation c is being advanced by another writer", "pid " + strconv.Itoa(os.Getpid()), "on " + first.Host, "since " + first.Since.UTC().Format("2006-01-02 15:04:05 UTC")} {
		if !contains(err, want) {
			t.Fatalf("%q lacks %q", err, want)
		}
	}
	// claiming again what one holds renews it, keeping its start
	again, err := e.s.Claim(e.ctx, "c", first, history.DefaultLease)
	if err != nil || !again.Since.Equal(first.Since) || again.Epoch != first.Epoch {
		t.Fatalf("renewing by Claim: %+v, %v; first %+v", again, err, first)
	}
}

// Table: who may take a claim another holder has, by its lease and node.
func takenOverOnlyWhenGone(t *testing.T, s Subject) {
	for _, tc := range []struct {
		name    string
		holder  func() history.Holder
		elapsed time.Duration // since the claim, against a lease of a minute
		taken   bool
		shared  bool // holds for stores shared by processes only
	}{
		{"another host, lease running", elsewhere, 59 * time.Second, false, false},
		{"another host, lease run out", elsewhere, 61 * time.Second, true, false},
		{"this process, lease running", history.NewHolder, 59 * time.Second, false, false},
		{"this process, lease run out", history.NewHolder, 61 * time.Second, true, false},
		{"this node, no such pid", func() history.Holder { h := history.NewHolder(); h.PID = noSuchPID; return h }, time.Second, true, true},
		// another container with the same host name: its pid means nothing here
		{"this host name, another node, no such pid", func() history.Holder {
			h := history.NewHolder()
			h.PID, h.Node = noSuchPID, "other-node"
			return h
		}, time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.shared && !s.Shared {
				t.Skip("a store of one process judges holders by their lease alone")
			}
			e := s.env(t)
			e.conversation("c")
			if _, err := e.s.Claim(e.ctx, "c", tc.holder(), time.Minute); err != nil {
				t.Fatal(err)
			}
			e.clock.Add(tc.elapsed)
			_, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute)
			var held *history.HeldError
			if tc.taken != (err == nil) || (!tc.taken && !errors.As(err, &held)) {
				t.Fatalf("taken %v, err %v", tc.taken, err)
			}
			// a write without a claim is refused while either holder lives
			if err := e.s.Append(e.ctx, "c", UserText("x")); !errors.As(err, &held) {
				t.Fatalf("an append without the claim went through: %v", err)
			}
		})
	}
}

// A holder whose process is gone on this node (kill -9) loses its claim at
// once: the next writer does not wait out the lease.
func deadProcessTakenOver(t *testing.T, s Subject) {
	if !s.Shared {
		t.Skip("a store of one process judges holders by their lease alone")
	}
	e := s.env(t)
	e.conversation("c")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := history.NewHolder()
	dead.PID = cmd.Process.Pid // exited and reaped
	dead, err := e.s.Claim(e.ctx, "c", dead, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	next, err := e.open().Claim(e.ctx, "c", history.NewHolder(), history.DefaultLease)
	if err != nil {
		t.Fatalf("the dead holder's claim was not taken over: %v", err)
	}
	if err := e.s.Append(history.Writing(e.ctx, dead), "c", UserText("late")); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the dead holder appended: %v", err)
	}
	if err := e.s.Append(history.Writing(e.ctx, next), "c", UserText("mine")); err != nil {
		t.Fatal(err)
	}
}

// A writer whose claim was taken over — paused past its lease, cut off —
// appends nothing, keeps nothing and cannot renew it (fencing); its
// release leaves the new holder's claim alone.
func takenOverWritesNothing(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	old, err := e.s.Claim(e.ctx, "c", elsewhere(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(history.Writing(e.ctx, old), "c", UserText("before")); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Minute)
	taker, err := e.open().Claim(e.ctx, "c", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = e.s.Append(history.Writing(e.ctx, old), "c", UserText("after"))
	if !errors.Is(err, history.ErrClaimLost) || !contains(err, "pid "+strconv.Itoa(os.Getpid())+" on "+taker.Host) || !contains(err, "nothing was written") {
		t.Fatalf("the old writer's append: %v", err)
	}
	if err := e.s.Keep(history.Writing(e.ctx, old), "c", history.Part{Type: history.ToolResultPart, CallID: "x", Text: "r"}); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the old writer's keep: %v", err)
	}
	if err := e.s.Renew(e.ctx, "c", old, time.Minute); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("the old writer's renew: %v", err)
	}
	if err := e.s.Release(e.ctx, "c", old); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(history.Writing(e.ctx, taker), "c", UserText("taker")); err != nil {
		t.Fatalf("the old writer's release freed the taker's claim: %v", err)
	}
	msgs, err := e.s.Messages(e.ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if kept, _ := e.s.Kept(e.ctx, "c"); len(msgs) != 2 || msgs[1].Parts[0].Text != "taker" || len(kept) != 0 {
		t.Fatalf("messages %+v, kept %+v", msgs, kept)
	}
	// released, the claim is free: and a writer that lost it cannot write
	if err := e.s.Release(e.ctx, "c", taker); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(history.Writing(e.ctx, taker), "c", UserText("gone")); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("append after release: %v", err)
	}
	if err := e.s.Renew(e.ctx, "c", taker, time.Minute); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("renew after release: %v; Renew must never take a claim", err)
	}
	if err := e.s.Append(e.ctx, "c", UserText("free")); err != nil {
		t.Fatalf("append with no holder: %v", err)
	}
}

func writeOutsideClaim(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	a, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var held *history.HeldError
	if err := e.s.Append(e.ctx, "c", UserText("outside")); !errors.As(err, &held) || held.Holder.Token != a.Token {
		t.Fatalf("an append outside the claim while it is held: %v; want a HeldError", err)
	}
	if err := e.s.Keep(e.ctx, "c", history.Part{Type: history.ToolResultPart, CallID: "k", Text: "r"}); !errors.As(err, &held) {
		t.Fatalf("a keep outside the claim while it is held: %v; want a HeldError", err)
	}
	// a holder that never claimed writes nothing
	if err := e.s.Append(history.Writing(e.ctx, history.NewHolder()), "c", UserText("stranger")); !errors.Is(err, history.ErrClaimLost) {
		t.Fatalf("an append by a holder that never claimed: %v", err)
	}
	if err := e.s.Renew(e.ctx, "c", a, time.Minute); err != nil {
		t.Fatal(err)
	}
	// renewed, the lease runs a minute from now
	e.clock.Add(50 * time.Second)
	if _, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute); !errors.As(err, &held) {
		t.Fatalf("a claim 50s into a renewed lease of a minute: %v; want a HeldError", err)
	}
	if err := e.s.Release(e.ctx, "c", a); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "c", UserText("free")); err != nil {
		t.Fatalf("an append once the claim is released: %v", err)
	}
	if msgs, err := e.s.Messages(e.ctx, "c"); err != nil || len(msgs) != 1 {
		t.Fatalf("%d messages, %v; want only the one appended once free", len(msgs), err)
	}
}

// A store that counts takeovers (Holder.Epoch) gives each new holder a
// larger epoch; claiming again keeps it. A store that does not leaves 0.
func epochsGrow(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	var last int64
	for i := range 3 {
		h, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if h.Epoch != 0 && h.Epoch <= last || h.Epoch == 0 && last != 0 {
			t.Fatalf("takeover %d: epoch %d after %d", i, h.Epoch, last)
		}
		last = h.Epoch
		if i == 1 {
			if err := e.s.Release(e.ctx, "c", h); err != nil { // released, not lapsed
				t.Fatal(err)
			}
			continue
		}
		e.clock.Add(2 * time.Minute)
	}
}

func claimRefusesBadInput(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	for _, tc := range []struct {
		id    string
		h     history.Holder
		lease time.Duration
		want  string
	}{
		{"c", history.NewHolder(), 0, "the lease must be positive, got 0s"},
		{"c", history.Holder{PID: 1}, time.Minute, "the holder has no token"},
		{"nope", history.NewHolder(), time.Minute, "conversation nope: no such conversation"},
	} {
		if _, err := e.s.Claim(e.ctx, tc.id, tc.h, tc.lease); !contains(err, tc.want) {
			t.Errorf("Claim(%q, %+v, %v) = %v, want %q", tc.id, tc.h, tc.lease, err, tc.want)
		}
	}
	if err := e.s.Keep(e.ctx, "c", history.Part{Type: history.TextPart, Text: "x"}); !contains(err, `want tool results with call ids, got a "text" part`) {
		t.Errorf("Keep of a text part: %v", err)
	}
}

// A finished call's result is kept at once, is read by another opening of
// the store, and goes with the round's append.
func keptUntilRound(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	e.conversation("other")
	fast := history.Part{Type: history.ToolResultPart, CallID: "toolu_fast", Text: "fast <done> & \"ok\"", SpillPath: ".myelin/tool-results/f.txt"}
	if err := e.s.Keep(e.ctx, "c", fast); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Keep(e.ctx, "other", history.Part{Type: history.ToolResultPart, CallID: "o", Text: "o"}); err != nil {
		t.Fatal(err)
	}
	s2 := e.open()
	kept, err := s2.Kept(e.ctx, "c")
	if err != nil || len(kept) != 1 || kept[0].Text != fast.Text || kept[0].SpillPath != fast.SpillPath || kept[0].CallID != "toolu_fast" {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	if err := s2.Append(e.ctx, "c", UserText("a prompt keeps them")); err != nil {
		t.Fatal(err)
	}
	if kept, _ := s2.Kept(e.ctx, "c"); len(kept) != 1 {
		t.Fatalf("a message without results removed the kept ones: %+v", kept)
	}
	if err := s2.Append(e.ctx, "c", history.Message{Role: history.User, Parts: []history.Part{fast}}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := s2.Kept(e.ctx, "c"); len(kept) != 0 {
		t.Fatalf("the round's append left %+v", kept)
	}
	if kept, _ := s2.Kept(e.ctx, "other"); len(kept) != 1 {
		t.Fatalf("another conversation's kept results went: %+v", kept)
	}
}

func keptAgainReplaces(t *testing.T, s Subject) {
	e := s.env(t)
	e.conversation("c")
	h, err := e.s.Claim(e.ctx, "c", history.NewHolder(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w := history.Writing(e.ctx, h)
	if err := e.s.Keep(w, "c", history.Part{Type: history.ToolResultPart, CallID: "k1", Text: "first"}, history.Part{Type: history.ToolResultPart, CallID: "k2", Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Keep(w, "c", history.Part{Type: history.ToolResultPart, CallID: "k1", Text: "again", IsError: true}); err != nil {
		t.Fatal(err)
	}
	kept, err := e.s.Kept(e.ctx, "c")
	if err != nil || len(kept) != 2 {
		t.Fatalf("Kept = %+v, %v", kept, err)
	}
	byCall := map[string]history.Part{}
	for _, p := range kept {
		byCall[p.CallID] = p
	}
	if p := byCall["k1"]; p.Text != "again" || !p.IsError || byCall["k2"].Text != "two" {
		t.Fatalf("Kept = %+v; want k1 replaced by the second keep", kept)
	}
}
