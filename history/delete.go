package history

import "context"

// Deleter is the part of a Store that deletes a conversation. It is
// optional: a Store without it keeps every conversation for ever.
//
// Delete removes conversation id whole — its record, its messages, the
// requests kept for it (Requests), the files kept for it (Blobs) — or
// nothing: it is refused with a *HeldError while a writer holds the
// conversation's claim (a turn is running), with an error wrapping
// ErrNotFound when there is no such conversation, and it never deletes
// another conversation, a subagent's included (a child names its
// parent; deleting the parent leaves the child, which then names a
// parent that is gone). The claim is checked as every write's is (see
// Store): under Writing(ctx, h), the delete is h's to make when h holds
// the claim (the writer deleting what it started), and refused with
// ErrClaimLost when it does not. The workspace's spill files are not the
// store's: whoever deletes a conversation removes those its records name.
// A store that keeps branches (Brancher) deletes the conversation's
// branches with it, and theirs; it refuses the delete with ErrHasForks
// while another conversation shares the messages of any of them, and
// with a *HeldError naming the branch while a live holder has a branch's
// own claim.
type Deleter interface {
	Delete(ctx context.Context, id string) error
}
