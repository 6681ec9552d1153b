package history

import "context"

// A Mark is what a store keeps of a conversation for a reader that needs
// only its later messages: the place From of the first message it needs,
// and the reader's own facts of the messages before it (Facts). A turn
// that resumes a long conversation whose older part was summarised reads
// the mark and the messages from From on, not every message stored
// (issue 34): the agent sets it, and says in its Facts what it needs of
// what it does not read (the settings last stored, how many records).
//
// The store does not read Facts: it keeps them byte for byte. What it
// must do is drop a mark whenever the messages it was set over change
// other than by being added to: Rewind and Switch drop the mark of every
// conversation whose messages they change, in their transaction; a Fork
// or a branch starts without one; Delete takes it along. An Append leaves
// it: whoever sets a mark must set one that stays true as messages are
// added after it (the agent's does).
type Mark struct {
	// From is the place of the first message the mark's reader needs: 0
	// is no mark (every message is read).
	From int
	// Facts are the reader's, kept as given; nil with From 0.
	Facts []byte
}

// Marker is a Store that keeps a Mark per conversation (see Mark), so that
// a reader of the later messages reads those only. Memory and the durable
// stores implement it; ReadMarked reads through it when a store does.
type Marker interface {
	// SetMark keeps m as conversation id's mark, replacing the one kept;
	// Mark{} drops it. It checks the writer's claim as Append does, in
	// the same transaction, and need not wait for the disk (a crash may
	// lose it, leaving the mark before it, which stayed true). A From
	// below 0 or past the conversation's count of messages is an error
	// saying so, as is Facts with From 0; an unknown conversation is an
	// error wrapping ErrNotFound.
	SetMark(ctx context.Context, id string, m Mark) error
	// Marked returns conversation id's mark and its messages from the
	// mark's From on, both as the store held them at one moment: with no
	// mark kept, Mark{} and every message, as Messages returns them. Like
	// Messages' slices, the messages and the Facts returned are not to
	// be modified. An unknown conversation is an error wrapping
	// ErrNotFound.
	Marked(ctx context.Context, id string) (Mark, []Message, error)
}

// ReadMarked is conversation id's mark in s and its messages from the
// mark's From on (see Marker.Marked): through s's Marked when s is a
// Marker, else every message under Mark{}.
func ReadMarked(ctx context.Context, s Store, id string) (Mark, []Message, error) {
	if m, ok := s.(Marker); ok {
		return m.Marked(ctx, id)
	}
	msgs, err := s.Messages(ctx, id)
	return Mark{}, msgs, err
}

// RecordReader is a Store that reads a conversation's record without
// counting its stored messages: Get counts them (a row lost or added
// behind the store's back is reported), which at 100k messages is a walk
// of 100k index entries, the one read a resume from a mark would still
// pay in proportion to the conversation's length. Record's Messages is
// the count of messages appended, as the record keeps it. So a row lost
// behind the store's back before a mark is not noticed by a turn that
// reads the record this way and the messages from the mark on (it sends
// none of them): Get, List and every whole read still report it. Memory
// and the durable stores implement it; ReadRecord reads through it when a
// store does.
type RecordReader interface {
	// Record returns conversation id's record as Get does, its checksums
	// checked, without counting its messages; an unknown conversation is
	// an error wrapping ErrNotFound.
	Record(ctx context.Context, id string) (Conversation, error)
}

// ReadRecord is conversation id's record in s: through s's Record when s
// is a RecordReader, else its Get.
func ReadRecord(ctx context.Context, s Store, id string) (Conversation, error) {
	if r, ok := s.(RecordReader); ok {
		return r.Record(ctx, id)
	}
	return s.Get(ctx, id)
}
