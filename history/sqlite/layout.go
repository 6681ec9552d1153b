package sqlite

// This file is the SQLite store's layout: its tables, the layouts before
// this one and how a store of each is brought to it when opened, and the
// checksums of its rows and records.

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/myelin-run/myelin/history/internal/record"
)

const schema = `
CREATE TABLE IF NOT EXISTS conversations (
	id      TEXT PRIMARY KEY,
	system  TEXT NOT NULL,
	created TEXT NOT NULL,
	updated TEXT NOT NULL,
	messages INTEGER NOT NULL DEFAULT 0, -- how many messages it holds (layout 3)
	crc      INTEGER NOT NULL DEFAULT 0, -- recordChecksum of id, system, created, parent, parent_call (layout 3)
	parent      TEXT NOT NULL DEFAULT '', -- Conversation.Parent (layout 4)
	parent_call TEXT NOT NULL DEFAULT '', -- Conversation.ParentCall (layout 4)
	updated_crc INTEGER NOT NULL DEFAULT 0, -- updatedChecksum of id, updated (layout 5)
	base      TEXT NOT NULL DEFAULT '', -- Conversation.Base: whose first base_at messages are its first (layout 6)
	base_at   INTEGER NOT NULL DEFAULT 0, -- Conversation.BaseAt (layout 6)
	branch_of TEXT NOT NULL DEFAULT '', -- Conversation.BranchOf (layout 6)
	base_crc  INTEGER NOT NULL DEFAULT 0 -- record.BaseChecksum of id, base, base_at, branch_of (layout 6)
);
CREATE INDEX IF NOT EXISTS conversations_parent ON conversations(parent) WHERE parent != '';
` + branchIndexes + `
CREATE TABLE IF NOT EXISTS messages (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	seq          INTEGER NOT NULL,
	message      BLOB NOT NULL, -- the Message as JSON (result.JSON), read by decodeMessage
	crc          INTEGER NOT NULL DEFAULT 0, -- messageChecksum (layout 3), checked as it is read
	PRIMARY KEY (conversation, seq)
);
` + schemaV2 + marksV8

// schemaV2 is what layout 2 added to layout 1: the claims (one writer per
// conversation) and the results kept as their calls finish.
const schemaV2 = `
CREATE TABLE IF NOT EXISTS claims (
	conversation TEXT PRIMARY KEY REFERENCES conversations(id),
	token        TEXT NOT NULL,
	pid          INTEGER NOT NULL,
	host         TEXT NOT NULL,
	node         TEXT NOT NULL, -- Holder.Node: where pid means a process
	since        INTEGER NOT NULL, -- Unix nanoseconds
	expires      INTEGER NOT NULL  -- Unix nanoseconds
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kept (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	call_id      TEXT NOT NULL,
	part         BLOB NOT NULL, -- the Part as JSON (result.JSON)
	PRIMARY KEY (conversation, call_id)
) WITHOUT ROWID; -- one b-tree: a keep writes one page, not a row and its index
`

// schemaV3 is what layout 3 added to layout 2: a checksum per message and
// a count of messages per conversation, so that a damaged message or a
// missing one is found and reported. Upgrading also fills both in
// (fillChecksums).
const schemaV3 = `
ALTER TABLE messages ADD COLUMN crc INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN messages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN crc INTEGER NOT NULL DEFAULT 0;
UPDATE conversations SET messages = (SELECT COUNT(*) FROM messages WHERE conversation = conversations.id);
`

// schemaV4 is what layout 4 added to layout 3: the link of a
// conversation a tool call started (a subagent's) to that call
// (Conversation.Parent, ParentCall), and the index Children reads. The
// records of layout 3 have no link, and their checksums stay as they are
// (recordChecksum of an unlinked record is layout 3's).
const schemaV4 = `
ALTER TABLE conversations ADD COLUMN parent TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN parent_call TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS conversations_parent ON conversations(parent) WHERE parent != '';
`

// schemaV5 is what layout 5 added to layout 4: a checksum of each
// conversation's last update time, the one field of a record that changes
// (with every Append) and that no checksum covered — it orders List, and
// so decides what --continue continues. Upgrading fills it in
// (fillUpdatedChecksums).
const schemaV5 = `
ALTER TABLE conversations ADD COLUMN updated_crc INTEGER NOT NULL DEFAULT 0;
`

// schemaV6 is what layout 6 added to layout 5: the link of a fork or a
// branch to the conversation whose first messages it shares
// (Conversation.Base, BaseAt, BranchOf; docs/branches.md) and its
// checksum. A record of layout 5 shares nothing: its link is empty, and
// the checksum of an empty link is 0 (record.BaseChecksum), so nothing is
// filled in.
const schemaV6 = `
ALTER TABLE conversations ADD COLUMN base TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN base_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN branch_of TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN base_crc INTEGER NOT NULL DEFAULT 0;
` + branchIndexes

// branchIndexes are the indexes of layout 6: the conversations sharing a
// conversation's messages (a Rewind points them elsewhere, a Delete
// refuses while there are any), and its branches (Branches).
const branchIndexes = `
CREATE INDEX IF NOT EXISTS conversations_base ON conversations(base) WHERE base != '';
CREATE INDEX IF NOT EXISTS conversations_branch_of ON conversations(branch_of) WHERE branch_of != '';
`

// schemaV7 is what layout 7 added to layout 6: each conversation's mark
// (history.Mark), at most one, its row written by SetMark and deleted in
// the transaction of every write that changes the conversation's
// messages other than by appending (Rewind, Switch, Delete). A store of
// layout 6 has no marks: nothing is filled in. The layout's number is
// what keeps a myelin of layout 6 out of a store of layout 7 (it refuses
// any layout but its own and those before it): such a myelin would
// rewind or switch without deleting the mark. One that was already
// running when the store was brought to 7 still could; the mark's
// row_crc is what finds that (checkMark): the mark was set over the
// messages before the row it names, and a rewind or switch that moved
// them moved that row. Its Delete of a marked conversation deletes the
// rows of the tables it knows of, then the record: the mark's reference
// cascades (a myelin's connections enforce foreign keys, layout 6's as
// 7's: OpenWith), so the mark goes with it, where a plain reference
// refused the delete (nothing was lost, but it could not delete).
const schemaV7 = `
CREATE TABLE IF NOT EXISTS marks (
	conversation TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
	start        INTEGER NOT NULL, -- Mark.From, above 0 (no row: no mark)
	facts        BLOB NOT NULL, -- Mark.Facts as given
	row_crc      INTEGER NOT NULL, -- messages.crc of the conversation's own message numbered start when it was set, noRow where that is its base's
	crc          INTEGER NOT NULL -- markChecksum of conversation, start, row_crc and facts
) WITHOUT ROWID; -- one b-tree, read by its key only
`

// marksV8 is the marks table of layout 8: layout 7's (schemaV7) as a
// table with rowids, its facts its last column. Layout 7's was a table
// without rowids, its facts before its checksums: SQLite finds a row of
// such a table by comparing the keys of the rows it passes, and reads a
// row whose record spills onto overflow pages whole to compare it, so
// that every statement that looked up any conversation's mark — every
// Append's among them — read a mark's facts (22 MB of the agent's pack:
// ~7 ms), and its checksums, stored after them, were reached by walking
// their overflow pages (~9 ms more). Here a mark is found through the
// index of its key (small rows) and its row by rowid (an integer in the
// b-tree's cells), and its place, checksums and length(facts) are read
// from the row's first page: Marked reads the facts only when the mark
// is not the one it keeps (docs/performance.md "A mark kept between
// reads"). Its comment must not name the other kind of table (the
// layout's test looks for the words).
const marksV8 = `
CREATE TABLE IF NOT EXISTS marks (
	conversation TEXT NOT NULL PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE, -- NOT NULL: with rowids, SQLite would take a NULL key
	start        INTEGER NOT NULL, -- Mark.From, above 0 (no row: no mark)
	row_crc      INTEGER NOT NULL, -- messages.crc of the conversation's own message numbered start when it was set, noRow where that is its base's
	crc          INTEGER NOT NULL, -- markChecksum of conversation, start, row_crc and facts
	facts        BLOB NOT NULL -- Mark.Facts as given; last, so that the columns before it are read without it
);
`

// schemaV8 brings layout 7 to 8: its marks, copied byte for byte into
// layout 8's table (marksV8), checksums and all — but for a mark whose
// conversation is gone (written with foreign keys off, by hand or by a
// restore), which no reader can reach and the new table's reference
// would refuse, failing the store's opening.
const schemaV8 = `
ALTER TABLE marks RENAME TO marks_v7;
` + marksV8 + `
INSERT INTO marks (conversation, start, row_crc, crc, facts) SELECT conversation, start, row_crc, crc, facts FROM marks_v7 WHERE conversation IN (SELECT id FROM conversations);
DROP TABLE marks_v7;
`

// dropUpdatedIndex drops the index on conversations(updated) that stores
// made before issue 13 have. Every Append changes updated, so the index
// cost each append a page of its own in the log (two of a round's eleven);
// List, the one reader ordered by updated, counts every conversation's
// messages anyway, and sorts its result in memory as cheaply without it.
// The layout stays 3: a store with or without the index reads the same.
const dropUpdatedIndex = `DROP INDEX IF EXISTS conversations_updated`

// schemaVersion is the store's layout, kept in SQLite's user_version. A
// message is one JSON column: one column to step over per row is half the
// cost of five when a long conversation is read after a restart. Layouts 1
// (no claims, no kept results) and 2 (no checksums) are brought to 3 when
// opened, and so is 3 (no links of subagents' conversations to their
// parents' calls) to 4, 4 (no checksum of the last update time) to 5, 5
// (no forks or branches) to 6, 6 (no marks) to 7, and 7 (marks read whole
// by every look-up: marksV8) to 8.
const schemaVersion = 8

// migrateWaiting is migrate, tried again while another connection holds
// the file in a way SQLite reports as busy at once, without its busy
// timeout (it does so while another process switches a new file to WAL or
// makes its shared memory), for as long as the busy timeout would wait.
func (s *Store) migrateWaiting() error {
	deadline := time.Now().Add(5 * time.Second)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := s.migrate(false)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
	}
}

// migrate brings an older layout to this one, and refuses a store of
// another layout, saying so. With create (createFile's file, made just
// now) it creates the tables of a new store; else a SQLite database with
// no tables is refused: not a store, and not taken for a new one.
func (s *Store) migrate(create bool) error {
	var version int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return s.explain("opening", err)
	}
	if version == schemaVersion {
		return s.dropOldIndex()
	}
	// Made or upgraded in one transaction that holds the write lock from
	// its start, the layout read again inside it: a second process opening
	// the same new store waits, then finds it made, never half made.
	tx, err := s.db.Begin()
	if err != nil {
		return s.explain("opening", err)
	}
	defer tx.Rollback()
	var tables int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return s.explain("opening", err)
	}
	if err := tx.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil {
		return s.explain("opening", err)
	}
	var doing, ddl string
	switch {
	case version == schemaVersion:
		return nil
	case version == 1:
		doing, ddl = "bringing layout 1 to 8", schemaV2+schemaV3+schemaV4+schemaV5+schemaV6+marksV8
	case version == 2:
		doing, ddl = "bringing layout 2 to 8", schemaV3+schemaV4+schemaV5+schemaV6+marksV8
	case version == 3:
		doing, ddl = "bringing layout 3 to 8", schemaV4+schemaV5+schemaV6+marksV8
	case version == 4:
		doing, ddl = "bringing layout 4 to 8", schemaV5+schemaV6+marksV8
	case version == 5:
		doing, ddl = "bringing layout 5 to 8", schemaV6+marksV8
	case version == 6:
		doing, ddl = "bringing layout 6 to 8", marksV8
	case version == 7:
		doing, ddl = "bringing layout 7 to 8", schemaV8
	case version == 0 && tables == 0 && create:
		doing, ddl = "creating", schema
	case version == 0 && tables == 0:
		return fmt.Errorf("history store %s is a SQLite database that has no tables: it is not a history store, and it is not taken for a new one; move it away to start a new store, or give another --store", s.path)
	default:
		return fmt.Errorf("history store %s has layout %d, and this myelin reads layout %d: use another --store, or a myelin that matches it", s.path, version, schemaVersion)
	}
	if _, err := tx.Exec(ddl + fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion)); err != nil {
		return s.explain(doing, err)
	}
	if version > 0 && version < 3 {
		if err := fillChecksums(tx); err != nil {
			return s.explain(doing, err)
		}
	}
	if version > 0 && version < 5 {
		if err := fillUpdatedChecksums(tx); err != nil {
			return s.explain(doing, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.explain(doing, err)
	}
	return s.dropOldIndex()
}

// dropOldIndex drops the index on conversations(updated) where a store
// made before issue 13 has it (dropUpdatedIndex); it writes only then.
func (s *Store) dropOldIndex() error {
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'conversations_updated'`).Scan(&n); err != nil {
		return s.explain("opening", err)
	}
	if n == 0 {
		return nil
	}
	if _, err := s.db.Exec(dropUpdatedIndex); err != nil {
		return s.explain("dropping the index on conversations(updated)", err)
	}
	return nil
}

// fillChecksums computes the checksum of every conversation record and
// every stored message, in the upgrade's transaction: they are taken as
// written.
func fillChecksums(tx *sql.Tx) error {
	if err := fillRecordChecksums(tx); err != nil {
		return err
	}
	rows, err := tx.Query(`SELECT rowid, conversation, seq, message FROM messages`)
	if err != nil {
		return err
	}
	type sum struct{ rowid, crc int64 }
	var sums []sum
	for rows.Next() {
		var r sum
		var conversation string
		var seq int
		var raw sql.RawBytes
		if err := rows.Scan(&r.rowid, &conversation, &seq, &raw); err != nil {
			rows.Close()
			return err
		}
		r.crc = record.MessageChecksum(conversation, seq, raw)
		sums = append(sums, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	update, err := tx.Prepare(`UPDATE messages SET crc = ? WHERE rowid = ?`)
	if err != nil {
		return err
	}
	defer update.Close()
	for _, r := range sums {
		if _, err := update.Exec(r.crc, r.rowid); err != nil {
			return err
		}
	}
	return nil
}

// fillRecordChecksums is fillChecksums for the conversation records.
func fillRecordChecksums(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT id, system, created FROM conversations`)
	if err != nil {
		return err
	}
	sums := map[string]int64{}
	for rows.Next() {
		var id, system, created string
		if err := rows.Scan(&id, &system, &created); err != nil {
			rows.Close()
			return err
		}
		sums[id] = record.RecordChecksum(id, system, created, "", "")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for id, sum := range sums {
		if _, err := tx.Exec(`UPDATE conversations SET crc = ? WHERE id = ?`, sum, id); err != nil {
			return err
		}
	}
	return nil
}

// fillUpdatedChecksums computes the checksum of every conversation's last
// update time (layout 5), in the upgrade's transaction: taken as written.
func fillUpdatedChecksums(tx *sql.Tx) error {
	rows, err := tx.Query(`SELECT id, updated FROM conversations`)
	if err != nil {
		return err
	}
	sums := map[string]int64{}
	for rows.Next() {
		var id, updated string
		if err := rows.Scan(&id, &updated); err != nil {
			rows.Close()
			return err
		}
		sums[id] = record.UpdatedChecksum(id, updated)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for id, sum := range sums {
		if _, err := tx.Exec(`UPDATE conversations SET updated_crc = ? WHERE id = ?`, sum, id); err != nil {
			return err
		}
	}
	return nil
}
