package sqlite

// This file is what the SQLite store keeps in memory of the messages it
// has read (Store.read), and how it knows that they are still the
// conversation's before it takes them again.

import (
	"context"
	"fmt"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// extend is keep of a read from the first message that reads no mark
// (Messages').
func (s *Store) extend(id string, known, fresh []history.Message, tag readTag) []history.Message {
	return s.keep(id, 0, known, fresh, tag, nil, 0)
}

// keep is the conversation id's messages from place start read so far,
// known (what the store kept of them when the read began), followed by
// fresh, the ones read after them; it keeps them as s.read[id] (from
// start, s.start[id]). The returned slice's capacity is its length, so a
// caller's append copies: s.read[id] keeps spare room, and the messages
// of later reads are appended there in place (at 100k messages a copy of
// all of them was about 10 MB a request), after the end of every slice
// handed out. tag is the read's (readTag), kept with what it keeps.
//
// What is kept is replaced only by what reaches further (or as far, from
// an earlier place): a read that finishes after another one kept more
// keeps nothing. mark, when not nil, is the mark the read took with its
// messages (Marked's), begun when s.markGen was gen: kept with them,
// unless a SetMark kept a mark since (then none is). A read without a mark
// (Messages') that replaces what was kept drops the mark kept with it;
// one that adds to it in place leaves it (the messages only grew). A read
// that keeps anything also ends the writer's claim on what is kept
// (Store.own): the read is of its own snapshot, which may precede the
// writer's rewind, switch or delete since — a read whole or a Marked on
// a reader connection, or a fork's read adding its base's rows in place
// — so the writer's next read checks the kept messages' tag against the
// store (TestAReadKeptAfterTheWritersRewindIsNotHandedToTheWriterUnchecked,
// TestAForksReadDoesNotHandItsBasesWriterRowsOfAnOlderSnapshot). The
// writer's next Append marks them its own again (keepAppended).
func (s *Store) keep(id string, start int, known, fresh []history.Message, tag readTag, mark *keptMark, gen uint64) []history.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(id)
	cur, ok := s.read[id]
	// further: this read's messages reach past what is kept, or as far
	// from an earlier place
	further := func(n int) bool {
		end, keptEnd := start+n, s.start[id]+len(cur)
		return !ok || end > keptEnd || end == keptEnd && start < s.start[id]
	}
	var out []history.Message
	kept, replaced := false, false
	switch {
	case len(known) == 0:
		// fresh is a new slice, with room; where nothing is kept from
		// start, it is what is kept, grown (a mark at the end of a
		// conversation keeps nothing: the read that finds nothing added
		// keeps its mark all the same)
		out = fresh
		grown := ok && len(cur) == 0 && s.start[id] == start
		if further(len(fresh)) || grown {
			delete(s.undecoded, id)
			s.read[id] = fresh // also when empty: Append then keeps what it adds
			kept, replaced = true, !grown
		}
	case ok && s.start[id] == start && len(cur) == len(known) && &cur[0] == &known[0]:
		// Nobody reads past len(cur): every slice handed out ends there
		// or before. append copies to a larger array when the room runs
		// out (the old one stays with its readers).
		out = append(cur, fresh...)
		s.read[id] = out
		kept = true
	default:
		// another read kept more (or other) messages meanwhile: known
		// and fresh are this read's, copied
		out = append(known[:len(known):len(known)], fresh...)
		if further(len(out)) {
			s.read[id] = out
			kept, replaced = true, true
		}
	}
	if kept {
		// a read's messages, of its snapshot: the writer's own (its
		// next reads take them without a query) only once it appends
		// again, not while its rewind or switch since may be what this
		// read missed
		delete(s.own, id)
		s.tags[id] = tag
		if start > 0 {
			s.start[id] = start
		} else {
			delete(s.start, id)
		}
		switch {
		case mark != nil && s.markGen == gen:
			s.marks[id] = *mark
		case mark != nil || replaced:
			delete(s.marks, id)
		}
	}
	s.usedLocked(id)
	return out[:len(out):len(out)]
}

// keepAppended adds the messages an Append just committed, raws as
// stored, to what the store has read of conversation id, when it had read
// all the after messages before them: the next Messages then reads only
// what was added since, not these back. They are kept as stored, and
// decoded (settle) before what the store keeps of id is next taken — by
// the synced append that ends the round, while its sync waits for the
// disk (Append), else by the next read — each from the bytes stored, as a
// read would decode it, so what Messages returns is what a store opened
// afresh reads. A conversation the store has not read, or not to its end,
// is left to Messages (which also keeps the memory to the conversations
// read); one whose messages moved since it was read (the readTag it was
// kept with is not after's), dropped.
//
// The mark kept with them (Store.marks) stays only while it is the one
// the Append's transaction found (mark): else it is read again.
//
// It reports whether it kept them: then what the store keeps of id is the
// conversation as the Append's transaction left it (from s.start[id]),
// and, when owner is not nil (the writer whose claim the Append was
// under), that writer's own (Store.own: its next reads take it without a
// query) — marked under the same lock as it is kept, so that no read's
// keep of an older snapshot lands between the two and is taken for the
// writer's (TestAReadKeptAsTheWritersAppendIsKeptIsNotTheWritersOwn).
func (s *Store) keepAppended(id string, after readTag, raws [][]byte, mark markID, owner *history.Holder) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.read[id]
	n := s.start[id] + len(cur) + len(s.undecoded[id])
	if ok && n == after.n && s.tags[id] != after {
		s.dropReadLocked(id)
		return false
	}
	if ok && n != after.n {
		// what is kept is not the conversation this append followed
		// (a write whose sync failed skipped its forget): read again
		s.dropReadLocked(id)
		return false
	}
	if !ok {
		return false
	}
	if km, known := s.marks[id]; known && !km.is(mark) {
		// another opening set it since it was read: read it again
		delete(s.marks, id)
	}
	s.undecoded[id] = append(s.undecoded[id], raws...)
	if len(raws) > 0 {
		after.n += len(raws)
		after.crc = record.MessageChecksum(id, after.n, raws[len(raws)-1])
	}
	s.tags[id] = after
	if owner != nil {
		s.own[id] = owner.Token
	}
	s.usedLocked(id)
	return true
}

// settle decodes the messages kept of conversation id as stored
// (keepAppended) and appends them to what the store keeps of it, in place,
// as extend does: every slice handed out ends before them. A message that
// does not decode — never one that result.JSON wrote — drops what is kept
// of id, so that the next read reads it and says what is wrong. s.mu is
// held.
func (s *Store) settle(id string) {
	raws := s.undecoded[id]
	if len(raws) == 0 {
		return
	}
	cur := s.read[id]
	for _, raw := range raws {
		m, err := history.DecodeMessage(raw)
		if err != nil {
			s.dropReadLocked(id)
			return
		}
		cur = append(cur, m)
	}
	s.read[id] = cur
	delete(s.undecoded, id)
}

// settled is settle under s.mu.
func (s *Store) settled(id string) {
	s.mu.Lock()
	s.settle(id)
	s.mu.Unlock()
}

// Messages read nothing back after the writer's own append. Under a
// conversation's claim (history.Writing) nobody else appends to it,
// rewinds it, switches it or deletes it (every such write checks the
// claim in its transaction), so what an Append under that claim kept of
// it (keepAppended) stays the conversation's until this store changes it
// or the claim is lost: the writer's next Messages takes it as it is,
// without a query (a read of nothing new was a transaction a round, ~0.1
// ms). Every other read, and a read under another claim or none, reads
// the rows added since, as before. A writer that lost its claim may read
// what it kept while another appends: it can store nothing more (its
// next write fails), so at worst it builds one request from what it had.
// What the store keeps of a conversation's messages is still checked
// before any read takes it (readTag), and dropped with them (dropRead).

// forgetOwn takes every conversation off the fast path of ownMessages: a
// write that committed but whose sync failed (unsyncedError) returned
// before it could forget what it changed, so what is kept is checked
// again by the next read (readTag).
func (s *Store) forgetOwn() {
	s.mu.Lock()
	clear(s.own)
	s.mu.Unlock()
}

// ownMessages is what the store keeps of conversation id when the writer
// of ctx appended to it last (keepAppended), clipped to its length; ok is
// false when a read must go to the store.
func (s *Store) ownMessages(ctx context.Context, id string) (msgs []history.Message, ok bool) {
	w, writing := history.WriterOf(ctx)
	if !writing {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token, marked := s.own[id]; !marked || token != w.Token {
		return nil, false
	}
	if s.settle(id); s.own[id] != w.Token {
		return nil, false // dropped: a kept message did not decode
	}
	cur, kept := s.read[id]
	if !kept || s.start[id] > 0 {
		return nil, false // or kept from a mark's place on: read whole
	}
	s.usedLocked(id)
	return cur[:len(cur):len(cur)], true
}

// readTag is what a read of a conversation's first n messages is kept
// with (Store.tags), and checked against before the next read takes them
// as they were: the conversation's link to its base, and the checksum of
// the row that holds its n-th message — its own n-th row, or, where that
// message is its base's, the row of the conversation down its bases that
// stores it (heldCRC; noRow for no message at all). A rewind or switch —
// by any opening — that moved any of the n changes one of them: a message
// row is always read after the same messages, wherever it moves, so that
// a row still at n means the n before it are as kept. So does a
// conversation deleted and made again under its id by another opening:
// its rows, and its base's, are other rows (a row's checksum covers the
// time it was appended), even where the new one names a base of the same
// id at the same place — which a tag of the link alone, as readTag was
// before, took for the conversation kept (the review of issue 34's
// seventh session: TestAForkRemadeOverARemadeBaseIsReadAsItIsNow).
type readTag struct {
	n      int
	base   string
	baseAt int
	crc    int64
}

// noRow is readTag.crc where no row holds the n-th message (n is 0, or
// the row is missing: damage, which the read reports), and a mark's
// row_crc where its place is among its base's messages (marks).
const noRow = -1

// heldCRC is SQL: readTag.crc of conversation conv at message n (both
// parameters of the statement): the checksum of the row holding that
// message, or noRow where none does. The conversation's own row when it
// has one; else, while n is among the messages a conversation shares with
// its base, its base's, down its chain of bases (baseRowCRC). The chain is
// walked only where the conversation has no row at n (SQLite's COALESCE
// stops at its first value that is not NULL): a tag at a row of its own —
// every round of a conversation that has any — costs the one look-up it
// cost before.
func heldCRC(conv, n string) string {
	return `COALESCE((SELECT crc FROM messages WHERE conversation = ` + conv + ` AND seq = ` + n + `), ` + baseRowCRC(conv, n) + `, ` + fmt.Sprint(noRow) + `)`
}

// baseRowCRC is SQL: the checksum of the row holding conversation conv's
// message n where that message is its base's (n <= its base_at), NULL
// where no row does: conv and n are SQL expressions, n one that may name
// conv's record as x (x.base_at). It walks down the chain of bases to the
// first that stores the message (n above its base_at, or no base), at
// most maxBases down (a chain leading back into itself ends there, and
// the read reports it). A fork is made naming the conversation that
// stores its messages (Fork): one step, taken first without the walk (a
// recursive statement's queue cost ~12 µs more a read:
// BenchmarkReadTagStatements); a conversation rewound below its base_at
// may name a base that shares the message in turn.
func baseRowCRC(conv, n string) string {
	oneStep := `(SELECT m.crc FROM conversations x JOIN conversations b ON b.id = x.base JOIN messages m ON m.conversation = x.base AND m.seq = ` + n + `
		WHERE x.id = ` + conv + ` AND x.base != '' AND ` + n + ` > 0 AND ` + n + ` <= x.base_at AND ` + n + ` > b.base_at)`
	// the walk only where a base shares the message: its queue is set up
	// even when it walks nothing (~6 µs: a conversation without a base)
	walks := `EXISTS (SELECT 1 FROM conversations x WHERE x.id = ` + conv + ` AND x.base != '' AND ` + n + ` > 0 AND ` + n + ` <= x.base_at)`
	return `COALESCE(` + oneStep + `, CASE WHEN ` + walks + ` THEN (WITH RECURSIVE down(id, base, base_at, n, depth) AS (
		SELECT x.id, x.base, x.base_at, ` + n + `, 0 FROM conversations x WHERE x.id = ` + conv + `
		UNION ALL SELECT b.id, b.base, b.base_at, down.n, down.depth + 1 FROM down JOIN conversations b ON b.id = down.base
			WHERE down.base != '' AND down.n <= down.base_at AND down.depth < ` + fmt.Sprint(maxBases) + `)
	SELECT m.crc FROM down JOIN messages m ON m.conversation = down.id AND m.seq = down.n
	WHERE down.n > 0 AND (down.base = '' OR down.n > down.base_at) LIMIT 1) END)`
}

// dropRead drops the messages the store keeps of conversation id.
func (s *Store) dropRead(id string) {
	s.mu.Lock()
	s.dropReadLocked(id)
	s.mu.Unlock()
}

// dropReadLocked is dropRead with s.mu held.
func (s *Store) dropReadLocked(id string) {
	delete(s.read, id)
	delete(s.tags, id)
	delete(s.own, id)
	delete(s.undecoded, id)
	delete(s.used, id)
	delete(s.start, id)
	delete(s.marks, id)
}

// readKept bounds how many conversations' messages the store keeps in
// memory: a server reads many conversations over its life and must not
// hold every message of each for as long as it runs (10,000 conversations
// of a few rounds kept about 17 KiB each, and one of 100,000 messages tens
// of MB). A conversation forgotten is read whole at its next read, as by
// a store opened afresh; the conversations turning now are the ones used
// last, so they stay.
const readKept = 256

// usedLocked marks conversation id, kept in s.read, as used now, and
// forgets the least recently used others while more than readKept are
// kept. s.mu is held.
func (s *Store) usedLocked(id string) {
	s.tick++
	s.used[id] = s.tick
	for len(s.read) > readKept {
		oldest, at := "", uint64(0)
		for other, t := range s.used {
			if other != id && (oldest == "" || t < at) {
				oldest, at = other, t
			}
		}
		if oldest == "" {
			return
		}
		s.dropReadLocked(oldest)
	}
}
