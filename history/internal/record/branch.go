package record

import (
	"errors"
	"fmt"
)

// This file is what every store checks and says of forks and branches
// (history.Brancher).

var (
	// ErrNotBranch: a switch to a conversation that is not a branch of
	// the one switched (history.ErrNotBranch).
	ErrNotBranch = errors.New("not a branch of this conversation")
	// ErrHasForks: a delete of a conversation whose messages others share
	// (history.ErrHasForks).
	ErrHasForks = errors.New("other conversations share its messages")
)

// BaseChecksum is the checksum of a record's link to the messages it
// shares (history.Conversation.Base, BaseAt, BranchOf), kept beside them
// and rewritten with them when a Rewind or Switch points them elsewhere.
// It is 0 for a record that shares nothing, the value every record had
// before forks were kept, so that no record needs it filled in.
func BaseChecksum(id, base string, baseAt int, branchOf string) int64 {
	if base == "" && baseAt == 0 && branchOf == "" {
		return 0
	}
	return checksum(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s", id, base, baseAt, branchOf))
}

// CheckFork returns the error for a fork no store may make, saying what
// is wrong: no id, no base, itself as its base, a negative point, a
// BranchOf (branches are made by Rewind), or a parent link CheckLink
// refuses. That the base is there and long enough is each store's to
// check in its transaction (NoBase, BaseTooShort).
func CheckFork(id, base string, baseAt int, branchOf, parent, parentCall string) error {
	switch {
	case id == "":
		return fmt.Errorf("forking conversation %s: the fork's id is empty", base)
	case base == "":
		return fmt.Errorf("forking into conversation %s: no conversation to fork (Base is empty)", id)
	case base == id:
		return fmt.Errorf("forking conversation %s: the fork has the same id", id)
	case baseAt < 0:
		return fmt.Errorf("forking conversation %s at %d: the point is a count of messages, 0 or more", base, baseAt)
	case branchOf != "":
		return fmt.Errorf("forking conversation %s into %s: a fork is not a branch (BranchOf %q): branches are made by rewinding", base, id, branchOf)
	}
	return CheckLink(id, parent, parentCall)
}

// NoBase is the error (wrapping ErrNotFound) for forking conversation
// base, which is not in the store, into id.
func NoBase(id, base string) error {
	return fmt.Errorf("forking conversation %s into %s: %w", base, id, NotFound(base))
}

// BaseTooShort is the error for forking conversation base at at when it
// holds count messages.
func BaseTooShort(id, base string, at, count int) error {
	return fmt.Errorf("forking conversation %s into %s at message %d: it holds %d", base, id, at, count)
}

// ForkSystem is the error for forking conversation base into id with a
// system prompt that is not the base's: a fork sends its base's requests,
// so it takes the base's system prompt, and is given none or that one.
func ForkSystem(id, base string) error {
	return fmt.Errorf("forking conversation %s into %s: the fork's system prompt is not its base's (a fork sends its base's requests, so it takes the base's: give none, or the base's)", base, id)
}

// CheckRewind returns the error for rewinding conversation id, which holds
// count messages, to its first at: a point not before its end.
func CheckRewind(id string, at, count int) error {
	if at < 0 || at >= count {
		return fmt.Errorf("rewinding conversation %s to message %d: it holds %d, so the point must be 0 to %d", id, at, count, count-1)
	}
	return nil
}

// NotBranch is the error (wrapping ErrNotBranch) for switching conversation
// id to branch, which is not one of its branches (its BranchOf is
// branchOf: "" for a conversation that is no branch).
func NotBranch(id, branch, branchOf string) error {
	if branchOf == "" {
		return fmt.Errorf("switching conversation %s to %s: %w (it is a conversation of its own)", id, branch, ErrNotBranch)
	}
	return fmt.Errorf("switching conversation %s to %s: %w (it is a branch of %s)", id, branch, ErrNotBranch, branchOf)
}

// HasForks is the error (wrapping ErrHasForks) for deleting conversation
// id whose messages the conversations forks share.
func HasForks(id string, forks []string) error {
	return fmt.Errorf("deleting conversation %s: %w: %v; delete them first", id, ErrHasForks, forks)
}

// CheckRange returns the error for reading the messages of conversation
// id from index from to index to (not included): a range that starts
// before the first or ends before it starts. A range past the end is no
// error (it reads to the end).
func CheckRange(id string, from, to int) error {
	if from < 0 || to < from {
		return fmt.Errorf("reading messages %d to %d of conversation %s: the range must start at 0 or later and end no earlier than it starts", from, to, id)
	}
	return nil
}

// CheckMark is the error for marking conversation id, of count messages,
// from message from with facts bytes of facts (history.Marker.SetMark),
// or nil when it may be.
func CheckMark(id string, from, facts, count int) error {
	switch {
	case from < 0 || from > count:
		return fmt.Errorf("marking conversation %s from message %d: it holds %d messages, so a mark starts between 0 and %d", id, from, count, count)
	case from == 0 && facts > 0:
		return fmt.Errorf("marking conversation %s from message 0 with %d bytes of facts: a mark from 0 is no mark, and has none", id, facts)
	}
	return nil
}
