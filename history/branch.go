package history

import (
	"context"

	"github.com/myelin-run/myelin/history/internal/record"
)

// This file is the contract of forks and branches (issue 30): a
// conversation that continues another's first messages without copying
// them, and a conversation taken back to an earlier point with what came
// after kept. docs/branches.md says why it is built this way.

// Brancher is the part of a Store that forks and rewinds conversations.
// Every store of this module implements it; Memory, SQLite and Postgres
// keep the same rules, held by history/storetest.
//
// Messages never change once stored, so a conversation's first n
// messages are the same whenever they are read: a fork names them (Base,
// BaseAt) instead of copying them, in one small write whatever their
// number. A Rewind moves the rewound messages to a branch and points every
// conversation that named them at the branch, in one transaction, so that
// what any conversation reads never changes under it.
type Brancher interface {
	// Fork creates conversation c, whose first c.BaseAt messages are
	// those of conversation c.Base (0 ≤ c.BaseAt ≤ its count), shared,
	// not copied; c.System must be "" or the base's (the fork's requests
	// are the base's). c.ID, c.Parent and c.ParentCall are as Create
	// takes them; c.BranchOf must be "". It needs no claim on the base,
	// whose first c.BaseAt messages no writer can change, and makes the
	// fork unclaimed. The record returned is the one stored: its Base
	// names the conversation that keeps those messages — c.Base, or,
	// where c.Base itself shares them (c.BaseAt ≤ its BaseAt), the one it
	// shares them with, and so on up — so that a rewind of c.Base never
	// has to point the fork elsewhere. A different System is refused with
	// the same words in every store.
	Fork(ctx context.Context, c Conversation) (Conversation, error)
	// Rewind takes conversation id back to its first at messages (0 ≤ at
	// < its count), as a write of id (under Writing, its claim is
	// checked): the messages after at, and any results kept for its
	// unfinished round, go to a new branch, whose record it returns
	// (BranchOf id). Nothing is deleted.
	Rewind(ctx context.Context, id string, at int) (Conversation, error)
	// Branches returns the branches of conversation id, oldest first;
	// none is not an error, an id not in the store is ErrNotFound.
	Branches(ctx context.Context, id string) ([]Conversation, error)
	// Switch makes conversation id continue as branch does after the
	// point where they part, as a write of id: what id held after that
	// point becomes the branch's (the branch keeps its id, so a second
	// Switch switches back). A branch of another conversation is an
	// error wrapping ErrNotBranch; a branch whose own claim a live holder
	// has (someone writing it as a conversation of its own) is a
	// *HeldError naming the branch, whoever switches.
	Switch(ctx context.Context, id, branch string) error
}

// ErrNotBranch is wrapped by the error for switching a conversation to one
// that is not one of its branches.
var ErrNotBranch = record.ErrNotBranch

// ErrHasForks is wrapped by the error for deleting a conversation whose
// messages other conversations share (forks of it, or of its branches):
// they would lose their first messages. Delete the forks first. A
// conversation's own branches are deleted with it.
var ErrHasForks = record.ErrHasForks
