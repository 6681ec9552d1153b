// Package record is what every history store keeps and checks the same
// way, so that the stores of this module (history.Memory, history/sqlite,
// history/postgres) keep the same records, byte for byte, refuse the same
// input and say so in the same words: the checksums and time format of a
// stored record, the checks no store may skip, and the errors they give.
//
// It is plumbing under history, not API: an embedder uses a store through
// history.Store. It must not hold a store of its own, nor import history
// (history imports it); the errors it wraps are history's sentinels, which
// history declares as these values.
package record

import (
	"errors"
	"hash/crc32"
	"strconv"
	"sync"
	"time"
)

// The sentinels the errors of this package wrap; history exports each as
// its own (history.ErrNotFound is ErrNotFound), so errors.Is finds them
// whichever package made the error.
var (
	// ErrNotFound: a conversation, request or kept file is not in the store.
	ErrNotFound = errors.New("no such conversation")
	// ErrClaimLost: a writer's claim was taken over or released.
	ErrClaimLost = errors.New("this writer's claim on the conversation was lost")
	// ErrBlobTaken: a kept file's path holds other bytes.
	ErrBlobTaken = errors.New("the path is already kept with other bytes, and a kept file is never replaced")
)

// TimeFormat is how a store keeps a conversation's times as text.
const TimeFormat = time.RFC3339Nano

// Castagnoli is the CRC-32C table of every checksum a store keeps (this
// package's, and the stores' marks): computed by the CPU's own
// instruction where it has one (amd64, arm64), about 10 GB/s. Made at its
// first use, not at init: making it builds the instruction's shift
// tables, which every myelin process paid at its start, reading history
// or not (issue 34).
func Castagnoli() *crc32.Table { return castagnoli() }

// castagnoli makes Castagnoli's table once.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// checksum is the CRC-32C of raw.
func checksum(raw []byte) int64 { return int64(crc32.Checksum(raw, Castagnoli())) }

// MessageChecksum is a stored message's checksum: of its conversation, its
// number from 1 and its stored bytes, so that a message read under another
// number or conversation (a damaged index pointing at another row) fails
// it too.
func MessageChecksum(conversation string, seq int, raw []byte) int64 {
	var prefix [64]byte
	head := strconv.AppendInt(append(append(prefix[:0], conversation...), 0), int64(seq), 10)
	return int64(crc32.Update(crc32.Checksum(append(head, 0), Castagnoli()), Castagnoli(), raw))
}

// RecordChecksum is a conversation record's checksum: of the fields that
// never change once it is created (its id, system prompt, creation time as
// stored, and its link to a parent: "" for none). Its count of messages is
// checked against the messages themselves, its updated time by
// UpdatedChecksum. A record without a parent has the checksum records had
// before links were kept (SQLite layout 3), so that upgrading changes no
// record.
func RecordChecksum(id, system, created, parent, parentCall string) int64 {
	if parent == "" && parentCall == "" {
		return checksum([]byte(id + "\x00" + system + "\x00" + created))
	}
	return checksum([]byte(id + "\x00" + system + "\x00" + created + "\x00" + parent + "\x00" + parentCall))
}

// UpdatedChecksum is the checksum of a conversation's last update time as
// stored (TimeFormat, UTC), with its id: kept beside it, and written with
// it by every Append. A store that keeps a time, not text, checks
// TimeFormat of the time it reads back.
func UpdatedChecksum(id, updated string) int64 {
	return checksum([]byte(id + "\x00" + updated))
}

// SnapshotEvery is how often a store keeps a request's body whole rather
// than what it adds to the one before (history.Requests), so that
// rebuilding one reads at most this many rows.
const SnapshotEvery = 32
