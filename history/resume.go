package history

import "context"

// ResumePoint is what a restarted agent needs to build a conversation's
// next request body without encoding all its messages again: the bytes a
// wire encoded of the first messages of the conversation's last request
// (its kept prefix), what they encode, and what made them. It is a cache:
// a store that loses it, or an agent that finds it does not hold, costs
// only the encoding of every message (the slow path), never a wrong body.
// The agent checks it against the conversation as stored before a wire
// builds on it (agent/resume.go, docs/agent.md "Resuming a conversation").
type ResumePoint struct {
	// Wire says which wire made Bytes, with every setting its encoding
	// of messages depends on, and the build of myelin that ran it: a wire
	// takes back only a point of its own.
	Wire string `json:"wire"`
	// Rows is how many stored messages (records included) the request was
	// built from: its messages are the view (window.View) of the first
	// Rows stored messages.
	Rows int `json:"rows"`
	// Messages is how many of those view messages Bytes encode.
	Messages int `json:"messages"`
	// Last is the role of the last message group Bytes end with.
	Last Role `json:"last"`
	// Digest is a digest of the Messages view messages' roles and parts,
	// as the agent computes it (agent/resume.go): a conversation changed
	// behind the agent's back (rewound, switched, edited by another
	// writer) no longer gives it.
	Digest string `json:"digest"`
	// Bytes are the encoded start of the body, as the wire kept it.
	Bytes []byte `json:"-"`
}

// Resumes is the part of a Store that keeps each conversation's
// ResumePoint, so that a restart resumes it at the cost of a running
// agent's next request. It is optional: an agent on a store without it
// encodes the first request after a restart whole, as it always did.
type Resumes interface {
	// KeepResume keeps p as conversation id's resume point, in place of
	// the one it kept before. It need not wait for the disk (a point is a
	// cache, not a promise of contract §7). It keeps a copy of p.Bytes.
	// Of Bytes it writes only what differs from the point it kept before.
	KeepResume(ctx context.Context, id string, p ResumePoint) error
	// ResumeOf returns conversation id's resume point (its Bytes in
	// memory of their own, which the caller may keep, best with room to
	// grow: a wire builds the next body after them); none kept is an
	// error wrapping ErrNotFound, and so is one whose bytes do not read
	// back whole (each part is checked as it is read).
	ResumeOf(ctx context.Context, id string) (ResumePoint, error)
}
