package sqlite

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// colliding is facts as long as want whose markChecksum (id, from, row)
// is want's: other's bytes but for its last four, chosen (CRC-32C is
// linear: "or made to", keptMark's comment).
func colliding(t *testing.T, id string, from int, row int64, want, other []byte) []byte {
	t.Helper()
	if len(other) != len(want) || len(other) < 4 {
		t.Fatal("colliding: lengths")
	}
	castagnoli := record.Castagnoli()
	head := markHead(id, from, row)
	h := crc32.Checksum(head, castagnoli)
	target := ^crc32.Update(h, castagnoli, want)
	prefix := other[:len(other)-4]
	state := ^crc32.Update(h, castagnoli, prefix)
	c := target
	for i := 0; i < 4; i++ {
		x := -1
		for j, v := range castagnoli {
			if v>>24 == c>>24 {
				x = j
				break
			}
		}
		c = ((c ^ castagnoli[x]) << 8) | uint32(x)
	}
	out := append([]byte(nil), prefix...)
	out = binary.LittleEndian.AppendUint32(out, state^c)
	if markChecksum(id, from, row, out) != markChecksum(id, from, row, want) || bytes.Equal(out, want) {
		t.Fatal("colliding: no collision made")
	}
	return out
}

// markHead is markChecksum's head: what it sums before the facts.
func markHead(id string, from int, row int64) []byte {
	head := strconv.AppendInt([]byte("mark\x00"+id+"\x00"), int64(from), 10)
	return append(strconv.AppendInt(append(head, 0), row, 10), 0)
}

// A fork marked among its base's messages (row_crc noRow), deleted and
// forked again under its id from another conversation, marked at the
// same place with a colliding checksum: the keeper reads the facts in
// the table, not those it kept of the first base's messages (found by
// the review of layout 8's kept marks: such a mark names no row of its
// own, so its place and checksums do not say which messages precede it).
func TestAForksMarkAmongItsBasesMessagesIsNeverTakenAsKept(t *testing.T) {
	kept := bigFacts('f', 20000)
	_, w, r := forkKept(t, kept)
	ctx := context.Background()
	deleteAll(t, w, "f")
	makeConv(t, w, "d", "", 0, "d", 10)
	makeConv(t, w, "f", "d", 8, "", 8)
	other := colliding(t, "f", 4, noRow, kept, bigFacts('g', len(kept)))
	if err := w.SetMark(ctx, "f", history.Mark{From: 4, Facts: other}); err != nil {
		t.Fatal(err)
	}
	m, msgs, err := r.Marked(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Facts, other) {
		t.Fatalf("the keeper handed out the facts of c's messages for a fork of d (messages %s)", texts(msgs))
	}
}
