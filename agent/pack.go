package agent

import (
	"crypto/rand"
	"encoding/binary"
	"errors"

	"github.com/myelin-run/myelin/history"
)

// This file is the pack a mark carries (issue 34, point 4, slice 3): the
// stored messages of the request's view — from the facts' place (the
// mark's facts are of the messages before it) to the mark's From —,
// packed (history.AppendPacked), so that a process resuming a long
// conversation reads one value and unpacks it instead of stepping and
// decoding every row of its window. The pack holds the stored messages
// themselves, as the store read them, so every reader answers over it as
// over the rows: nothing new to check beyond the mark's own guarantee
// (the store drops a mark with any change to the messages before it).
//
// A mark's Facts, as this agent writes them (markVersion 2):
//
//	version byte | uvarint len | facts (JSON, markFacts) | 16-byte pack id |
//	uvarint at (the facts' place, the pack's first) | the pack
//
// The pack id names the pack's contents: a process that packed or
// unpacked it keeps its messages (packs) and does not unpack it again for
// each request.

// packID names a pack: made at random when the pack is made.
type packID [16]byte

// packedMark is a mark's Facts read: the facts of the messages before
// at, and the pack of the stored messages from at to the mark's From.
type packedMark struct {
	facts []byte // markFacts, JSON
	id    packID
	at    int
	pack  []byte
}

// errNotOurs is a mark's Facts this agent did not write: another
// version's, or damaged.
var errNotOurs = errors.New("not a mark of this version")

// appendMark appends the Facts of a mark to dst: facts (JSON) of the
// messages before place at, and the pack of msgs, the stored messages
// from at to the mark's From.
func appendMark(dst, facts []byte, id packID, at int, msgs []history.Message) []byte {
	dst = append(dst, markVersion)
	dst = binary.AppendUvarint(dst, uint64(len(facts)))
	dst = append(dst, facts...)
	dst = append(dst, id[:]...)
	dst = binary.AppendUvarint(dst, uint64(at))
	return history.AppendPacked(dst, msgs)
}

// readMark reads a mark's Facts (appendMark); errNotOurs for any other
// bytes. The facts and the pack are b's: they are not copied.
func readMark(b []byte) (packedMark, error) {
	if len(b) == 0 || b[0] != markVersion {
		return packedMark{}, errNotOurs
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return packedMark{}, errNotOurs
	}
	var m packedMark
	m.facts, b = b[k:k+int(n)], b[k+int(n):]
	if len(b) < len(m.id) {
		return packedMark{}, errNotOurs
	}
	copy(m.id[:], b)
	b = b[len(m.id):]
	at, k := binary.Uvarint(b)
	if k <= 0 || at > 1<<40 {
		return packedMark{}, errNotOurs
	}
	m.at, m.pack = int(at), b[k:]
	return m, nil
}

// newPackID is a pack id never made before.
func newPackID() packID {
	var id packID
	rand.Read(id[:]) // never fails (crypto/rand)
	return id
}

// packMin and packGrowth say when a turn's end packs the view anew
// (packDue): when the messages stored past the pack are at least packMin
// and at least 1/packGrowth of those it holds. A resume then steps at
// most about a ninth of its window's rows, and the bytes packed over the
// conversation's life are about packGrowth+1 times its view's (its
// oldest messages are packed most often), at turns' ends, off the
// rounds' path.
const (
	packMin    = 256
	packGrowth = 8
)

// packDue reports whether a turn's end packs st's view anew, from place
// from (markFrom): the pack kept ends at st.packed.
func packDue(st *readState, from int) bool {
	past := st.end() - st.packed
	return past >= packMin && past >= (st.packed-from)/packGrowth
}

// maxPackBytes bounds the bytes of the messages a pack holds
// (packBytes): a view past it — its images, mostly, which a window counts
// by the image, not by the byte — is not packed, and a resume steps its
// rows, rather than write and hold a value this large anew at every
// eighth of its growth. (A variable for the tests alone.)
var maxPackBytes = 256 << 20

// packBytes is about the bytes of msgs packed: their parts' texts,
// inputs, raw blocks and images.
func packBytes(msgs []history.Message) int {
	n := 0
	for i := range msgs {
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			n += len(p.Text) + len(p.Input) + len(p.Raw) + len(p.Signature) + len(p.CallID) + len(p.Name) + len(p.SpillPath)
			for _, im := range p.Images {
				n += len(im.Data)
			}
		}
	}
	return n
}
