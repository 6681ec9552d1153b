package record

import (
	"fmt"
	"time"
)

// This file is the checks every store makes before it writes, and the
// errors every store gives for what is not there.

// CheckLink returns the error for a new conversation's link to its parent
// that no store may take, saying what is wrong: a parent call without a
// parent, a conversation its own parent. Whether the parent is in the
// store is each store's to check, in its Create's transaction (NoParent).
func CheckLink(id, parent, parentCall string) error {
	switch {
	case parentCall != "" && parent == "":
		return fmt.Errorf("creating conversation %s: it names the parent call %q but no parent conversation", id, parentCall)
	case parent != "" && parent == id:
		return fmt.Errorf("creating conversation %s: it names itself as its parent", id)
	}
	return nil
}

// NoParent is the error (wrapping ErrNotFound) for creating conversation
// id whose parent is not in the store.
func NoParent(id, parent string) error {
	return fmt.Errorf("creating conversation %s: its parent conversation %s: %w", id, parent, ErrNotFound)
}

// NotFound is the error (wrapping ErrNotFound) for conversation id, which
// is not in the store.
func NotFound(id string) error { return fmt.Errorf("conversation %s: %w", id, ErrNotFound) }

// NoRequest is the error (wrapping ErrNotFound) for request n of
// conversation id, which has count requests.
func NoRequest(id string, n, count int) error {
	if count == 0 {
		return fmt.Errorf("conversation %s has no stored request: %w", id, ErrNotFound)
	}
	return fmt.Errorf("conversation %s has requests 1 to %d, not %d: %w", id, count, n, ErrNotFound)
}

// CheckClaim returns the error for a claim of conversation id for lease by
// a holder whose token is token, that no store may take: a lease that is
// not positive, a holder without a token. It says which.
func CheckClaim(id, token string, lease time.Duration) error {
	if err := CheckLease(id, lease); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("claiming conversation %s: the holder has no token (make it with NewHolder)", id)
	}
	return nil
}

// CheckLease returns the error for a lease that is not positive.
func CheckLease(id string, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("claiming conversation %s: the lease must be positive, got %v", id, lease)
	}
	return nil
}

// ClaimLost is the error (wrapping ErrClaimLost) for a write to
// conversation id by writer (a holder, as its String says it), whose claim
// now has holder now ("": nobody holds it, it was released or taken over
// and released).
func ClaimLost(id, writer, now string) error {
	if now == "" {
		return fmt.Errorf("conversation %s: %w (%s held it; it was released or taken over since), so nothing was written", id, ErrClaimLost, writer)
	}
	return fmt.Errorf("conversation %s: %w: %s took it over, so nothing was written", id, ErrClaimLost, now)
}

// CheckKept returns the error for keeping a part that is not a tool result
// with a call id (Store.Keep): kind is the part's type, callID its call.
func CheckKept(id string, isResult bool, kind, callID string) error {
	if !isResult || callID == "" {
		return fmt.Errorf("keeping results in conversation %s: want tool results with call ids, got a %q part with call id %q", id, kind, callID)
	}
	return nil
}

// Alive reports whether a claim whose lease runs until expires may still
// be written by its holder at now: its lease runs and, when the holder is
// on this node (here, ThisNode; "" when it cannot tell), its process pid
// exists. A holder elsewhere is alive until its lease runs out; a holder
// known gone loses its claim at once, whatever its lease.
func Alive(now, expires time.Time, here, node string, pid int) bool {
	if !now.Before(expires) {
		return false
	}
	if here != "" && node == here && pid > 0 {
		return ProcessExists(pid)
	}
	return true
}
