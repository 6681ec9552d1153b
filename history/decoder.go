package history

// This file is the Decoder: DecodeMessage for a store reading many
// messages at once, without an allocation per string.

import "encoding/json"

// Decoder decodes stored messages as DecodeMessage does, to the same
// Messages, keeping what they hold — their strings, inputs and raw
// blocks, their parts — in a few large buffers it fills in turn rather
// than one allocation each: a store reading a long conversation back
// (100,000 messages after a restart) spent about half of each message's
// decoding allocating, and the collector as much again tracing what it
// allocated. A buffer's bytes are never written once a message holds
// them (its strings are those bytes), and each Part slice's capacity is
// its length, so an append to one copies. It is for one goroutine at a
// time; the bytes given to Message are not kept.
type Decoder struct {
	bytes []byte // the strings and values decoded, after len: room
	parts []Part // the parts decoded, after len: room
	ahead int    // bytes of stored messages still to decode (Message)
}

// Buffer sizes: a buffer is at most this large unless one message needs
// more, and no larger than what the caller says is still to come, so a
// read of a round or two keeps no more than it holds.
const (
	decoderBytes = 64 << 10
	decoderParts = 256
)

// Message decodes a stored message (DecodeMessage). ahead is how many
// bytes of stored messages the caller still has to decode, raw's among
// them (0 when it does not know): the buffers are sized to it, up to
// their usual size.
func (d *Decoder) Message(raw []byte, ahead int) (Message, error) {
	// Nothing decoded from raw is longer than raw (jsonstring.AppendRead):
	// room for len(raw) bytes holds all of it, and the strings already
	// in the buffer stay where they are.
	if cap(d.bytes)-len(d.bytes) < len(raw) {
		d.bytes = make([]byte, 0, max(len(raw), min(ahead, decoderBytes)))
	}
	d.ahead = max(ahead, len(raw))
	if m, ok := fastMessageWith(raw, d); ok {
		return m, nil
	}
	var m Message
	err := json.Unmarshal(raw, &m)
	return m, err
}

// readParts is partScanner.parts reading into d's parts, after the
// array's opening bracket: the message's parts, with a capacity of their
// length.
func (d *Decoder) readParts(s *partScanner) ([]Part, bool) {
	if len(d.parts) == cap(d.parts) {
		d.moreParts(len(d.parts)) // no part of this message yet: none moves
	}
	start := len(d.parts)
	if s.eat(']') {
		return d.parts[start:start:start], true
	}
	for {
		p, ok := s.part()
		if !ok {
			// encoding/json reads the message: what was read of it is
			// let go, its room used again
			clear(d.parts[start:])
			d.parts = d.parts[:start]
			return nil, false
		}
		if len(d.parts) == cap(d.parts) {
			// the message's parts so far go with it to a new buffer
			start = d.moreParts(start)
		}
		d.parts = append(d.parts, p)
		if s.eat(',') {
			continue
		}
		if !s.eat(']') {
			clear(d.parts[start:])
			d.parts = d.parts[:start]
			return nil, false
		}
		return d.parts[start:len(d.parts):len(d.parts)], true
	}
}

// moreParts starts a new buffer of parts, the parts after from in the
// current one (the message being read) moved to it, and returns where
// they begin in it (0).
func (d *Decoder) moreParts(from int) int {
	var moving []Part
	if d.parts != nil {
		moving = d.parts[from:]
	}
	// a part is rarely under 128 bytes stored, its message's share of
	// the rest counted
	// doubling past the buffer's size: a message of many parts is
	// copied a few times, not once per part
	next := make([]Part, len(moving), max(2*len(moving), len(moving)+1, min(d.ahead/128, decoderParts)))
	copy(next, moving)
	clear(moving) // the old buffer keeps nothing of this message
	d.parts = next
	return 0
}
