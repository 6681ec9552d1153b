// Package sqlite is the history.Store in one SQLite file: durable (WAL,
// each Append one transaction synced to disk unless history.Lazy),
// checked (every record and message under a checksum, damage reported and
// never dropped), holding the conversations' claims, and careful with the
// file it is given (it refuses a store it did not make rather than take it
// for a new one, and never deletes a file beside it).
//
// It owns the file's layout and its upgrades; it must not interpret
// messages beyond storing them (package history decodes them) nor be
// imported by a package that only reads messages.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
	"github.com/myelin-run/myelin/result"
)

// Store is a history.Store in one SQLite file, in WAL mode, each Append one
// transaction synced to disk (unless Lazy). It keeps the
// messages it has read in memory, and those it appends to a conversation it
// has read: stored messages never change, so a later Messages reads only the
// rows added since (by another process). Marked (mark.go) keeps those from
// the conversation's mark on, and its mark. It must not hand out what it
// keeps for callers to change.
type Store struct {
	db *sql.DB // the store's one writer connection, and its short reads
	// rdb is the store's readers, a pool of reader connections (readers.go): the read
	// transactions of a read whole and the other reads of many statements
	// run there (readDB), so that a long read holds neither the writer
	// nor the other conversations' reads (readconn, issue 34). Query-only
	// and deferred: each read one snapshot of the log, never a writer.
	rdb     *sql.DB
	path    string
	relaxed bool // the store never waits for the disk (Options.Relaxed)
	// logs syncs the write-ahead log after a synced write (logsync.go):
	// the connection commits at synchronous=NORMAL
	logs logSync

	mu   sync.Mutex
	read map[string][]history.Message // per conversation, the messages read so far, with room to grow (extend); handed out clipped
	tags map[string]readTag           // per conversation in read, what its messages were read at (checked before they are taken again)
	own  map[string]string            // per conversation in read, the claim token of the writer whose append left it whole (keepAppended)
	// per conversation in read, the messages appended after those in read,
	// as stored, not decoded yet (keepAppended, settle)
	undecoded map[string][][]byte
	// per conversation in read, when it was last used (s.tick at its last
	// read, append or take): the least recent is forgotten first once
	// more than readKept are kept (usedLocked)
	used map[string]uint64
	tick uint64
	// per conversation in read, the place of the first message kept
	// (none: 0, every message): a Marked read keeps the messages from its
	// mark's place on (cache.go)
	start map[string]int
	// per conversation in read, its mark as the store held it when what
	// is kept of it was read or appended (none: not known; mark.go)
	marks map[string]keptMark
	// counts the marks SetMark kept in marks: a read begun before one
	// keeps no mark it read (keep)
	markGen uint64
	// one SetMark at a time (a slot taken, or the caller's context ended
	// while waiting for it): the marks they keep follow their commits.
	// Per conversation would do (markSet keeps one conversation's), but
	// the write lock SQLite takes is the file's: SetMarks of two
	// conversations wait for each other there anyway.
	marking chan struct{}

	// a claim's read, prepared once
	selectClaim *sql.Stmt

	node string           // this process's node (Holder.Node)
	now  func() time.Time // the clock claims are timed by (tests set it)

	sent sentCache // the newest request of some conversations (requests.go)
}

// Options tune a SQLite store; the zero value is the default.
type Options struct {
	// Relaxed commits without waiting for the disk (SQLite's
	// synchronous=NORMAL in WAL mode): a commit survives a crash of the
	// process, but the last commits may be lost — never corrupted — when
	// the machine itself stops. By default every commit is synced to disk
	// before Append returns.
	Relaxed bool
	// Existing opens only a store that is there: where nothing is, it
	// makes nothing (no file, no directory) and returns an error wrapping
	// fs.ErrNotExist. For what only reads.
	Existing bool
	// NoFollow refuses to open the store when its directory, the store
	// file or its -wal, -shm or -journal file is a symbolic link (each
	// looked at with Lstat, never followed), with an error naming it: for
	// a store inside a workspace, where a cloned repository could plant a
	// link that sends the conversation elsewhere. It checks at open only;
	// it does not stop a link made while the store is open, and it says
	// nothing of the directories above the store's own.
	NoFollow bool
}

// Open opens the store at path with the default options, making it
// when nothing is there.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith opens the store at path. Only where nothing is there — no
// file, and none of the -wal, -shm and -journal files SQLite keeps beside
// it — is a new store made (with its directory), and not with Existing:
// then the error wraps fs.ErrNotExist. Anything else must be a store: an
// empty file, side files without their store or beside an empty file, a
// file that is not a SQLite database, a truncated one, one whose
// write-ahead log has a damaged header, a SQLite database without tables,
// or one that another process holds locked for longer than 5 seconds, is
// an error that says what was found and how to recover, and nothing is
// changed or deleted.
func OpenWith(path string, opts Options) (*Store, error) {
	none, err := checkFile(path, opts.NoFollow)
	if err != nil {
		return nil, err
	}
	if none {
		if opts.Existing {
			return nil, fmt.Errorf("there is no history store at %s: %w", path, fs.ErrNotExist)
		}
		if err := createFile(path); err != nil {
			return nil, err
		}
		// the one made, or one another process made meanwhile: checked
		if none, err = checkFile(path, opts.NoFollow); err != nil {
			return nil, err
		}
		if none {
			return nil, fmt.Errorf("history store %s was made, and removed before it was opened (by another process?)", path)
		}
	}
	// mode=rw: SQLite makes no file here (a store is made by createFile
	// alone), so a file removed since it was checked is an error. No
	// journal_mode here: it would write the file's header as the
	// connection opens, before the file is known to be a store; it is set
	// once that is known (a store's header keeps it).
	// _txlock=immediate: every transaction takes the write lock when it
	// begins, so that the busy timeout applies to it; a deferred one that
	// read first would fail at once when another process writes.
	// synchronous=NORMAL: a commit is in the log when it returns, and a
	// synced write syncs the log itself after it (logsync.go).
	// A connection that closes (the store's, or one database/sql found
	// bad) checkpoints its log, and removes it when it is the last: the
	// log kept open for the syncs is let go with it, no sync looking at
	// the log meanwhile (logSync.closeConn).
	var logs *logSync
	db := openDB(sqliteURI(path, "mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"), &logs)
	// One writer connection: SQLite has one writer at a time anyway, and
	// this way the store never waits on itself. Its long reads run on the
	// readers (rdb, below), not here, so that they hold up no write.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path, read: map[string][]history.Message{}, tags: map[string]readTag{}, own: map[string]string{}, undecoded: map[string][][]byte{}, used: map[string]uint64{}, start: map[string]int{}, marks: map[string]keptMark{}, marking: make(chan struct{}, 1), relaxed: opts.Relaxed, node: record.ThisNode(), now: time.Now}
	s.logs.syncFile = syncData
	logs = &s.logs // before any connection opens (migrateWaiting's)
	if err := s.migrateWaiting(); err != nil {
		db.Close()
		return nil, err
	}
	if !s.relaxed {
		// what an upgrade of the layout wrote, on disk before anything
		// is written in it
		s.logs.committed()
		if err := s.syncLog(); err != nil {
			db.Close()
			return nil, err
		}
	}
	if err := s.walMode(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.openReaders(); err != nil {
		db.Close()
		return nil, err
	}
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.selectClaim, selectClaimSQL},
	} {
		if *st.stmt, err = db.Prepare(st.sql); err != nil {
			s.rdb.Close()
			db.Close()
			return nil, s.explain("opening", err)
		}
	}
	return s, nil
}

// an append's one read (and a SetMark's): where the conversation ends,
// and its claim (a fork's own messages are numbered after the base_at it
// shares), its readTag there (the checksum of its last row, or, with none
// of its own, of the row its base_at-th message is read from: heldCRC),
// and what its mark is (its place and checksum, 0 and 0 for none:
// keepAppended compares them with the mark kept). Each column is named
// briefly (v1…v13, no table's alias): the driver copies every column's
// name at every query, and an expression's name is its whole text (~1 KiB
// for the checksum's).
var nextSeqSQL = `SELECT COALESCE((SELECT MAX(seq) FROM messages WHERE conversation = c.id), c.base_at) AS v1, c.messages AS v2,
			cl.token AS v3, cl.pid AS v4, cl.host AS v5, cl.node AS v6, cl.since AS v7, cl.expires AS v8,
			c.base AS v9, c.base_at AS v10, COALESCE((SELECT crc FROM messages WHERE conversation = c.id ORDER BY seq DESC LIMIT 1), ` + baseRowCRC("?1", "x.base_at") + `, ` + fmt.Sprint(noRow) + `) AS v11,
			COALESCE(k.start, 0) AS v12, COALESCE(k.crc, 0) AS v13
			FROM conversations c LEFT JOIN claims cl ON cl.conversation = c.id LEFT JOIN marks k ON k.conversation = c.id WHERE c.id = ?1`

// The other statements of the round's writes (rawtx.go).
const (
	insertSQL      = `INSERT INTO messages (conversation, seq, message, crc) VALUES (?, ?, ?, ?)`
	touchSQL       = `UPDATE conversations SET updated = ?, updated_crc = ?, messages = messages + ? WHERE id = ?`
	selectClaimSQL = `SELECT token, pid, host, node, since, expires FROM claims WHERE conversation = ?`
	insertKeptSQL  = `INSERT OR REPLACE INTO kept (conversation, call_id, part) VALUES (?, ?, ?)`
	dropKeptSQL    = `DELETE FROM kept WHERE conversation = ?`
)

// walMode puts the store in WAL mode, where it is not (a store made by
// hand, or put in another mode by another program): a setting kept in the
// file's header, so set once, and read by every connection after.
func (s *Store) walMode() error {
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		return s.explain("opening", err)
	}
	if mode == "wal" {
		return nil
	}
	if err := s.db.QueryRow(`PRAGMA journal_mode = WAL`).Scan(&mode); err != nil || mode != "wal" {
		return fmt.Errorf("history store %s: switching it to WAL mode from %q: %w", s.path, mode, err)
	}
	return nil
}

// explain makes a driver error say what is wrong with the store file.
func (s *Store) explain(doing string, err error) error {
	switch {
	case isBusy(err):
		return fmt.Errorf("history store %s is locked by another process (%s): %w", s.path, doing, err)
	case isDamaged(err):
		return fmt.Errorf("history store %s is not a myelin history database or is corrupt (%s): %w", s.path, doing, err)
	case cannotOpen(err):
		// a store in WAL mode is read through its -shm, which SQLite must
		// be able to make (or write) beside it
		return fmt.Errorf("history store %s: %s: %w: SQLite cannot open it, or make or write the -wal and -shm files beside it: is its directory read-only, or are they another user's? Nothing was changed", s.path, doing, err)
	}
	return fmt.Errorf("history store %s: %s: %w", s.path, doing, err)
}

// Close closes the database: the readers first, then the writer, which
// is then the last connection to the store, so that it checkpoints the
// log into the store's file and removes it. A reader still in a read
// when Close is called closes as its read ends, the last one then.
func (s *Store) Close() error {
	rerr := s.rdb.Close() // each connection frees the statements prepared on it (ownConn)
	err := s.db.Close()
	s.logs.close()
	if err == nil {
		err = rerr
	}
	return err
}

// Create starts a conversation.
func (s *Store) Create(ctx context.Context, c history.Conversation) error {
	now := time.Now().UTC()
	if c.Created.IsZero() {
		c.Created = now
	}
	if c.ID == "" {
		return errors.New("creating a conversation: its id is empty")
	}
	if err := record.CheckLink(c.ID, c.Parent, c.ParentCall); err != nil {
		return err
	}
	created := c.Created.UTC().Format(record.TimeFormat)
	doing := "creating conversation " + c.ID
	// synced (write, not lazy)
	err := s.write(ctx, doing, false, func(tx *sql.Tx) error {
		if c.Parent != "" {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, c.Parent).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return record.NoParent(c.ID, c.Parent)
			}
			if err != nil {
				return s.explain(doing, err)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, system, created, updated, crc, parent, parent_call, updated_crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			c.ID, c.System, created, created, record.RecordChecksum(c.ID, c.System, created, c.Parent, c.ParentCall), c.Parent, c.ParentCall, record.UpdatedChecksum(c.ID, created))
		if err != nil {
			return s.explain(doing, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("creating conversation %s: %w (another process may have created it at the same moment)", c.ID, history.ErrExists)
		}
		return nil
	})
	if err == nil {
		s.forget(c.ID) // what a read of a deleted conversation of this id kept meanwhile
	}
	return err
}

// Get returns a conversation's record, its messages counted: a row lost
// or added behind the store's back is reported (history.ErrDamaged).
func (s *Store) Get(ctx context.Context, id string) (history.Conversation, error) {
	return s.get(ctx, id, recordColumns)
}

// Record returns a conversation's record without counting its messages
// (see history.RecordReader): its checksums checked, its count the count
// appended.
func (s *Store) Record(ctx context.Context, id string) (history.Conversation, error) {
	return s.get(ctx, id, recordColumnsAsStored)
}

// get is Get with columns (recordColumns or recordColumnsAsStored),
// followed by columns scanned into extra.
func (s *Store) get(ctx context.Context, id, columns string, extra ...any) (history.Conversation, error) {
	return s.getIn(ctx, s.db, id, columns, extra...)
}

// querier is where a read runs its statements: the store's database
// (each statement its own snapshot), or a read transaction (one snapshot
// for all of them).
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// getIn is get run in q: in a transaction, beside the read's other
// statements, so that they read the store at one moment.
func (s *Store) getIn(ctx context.Context, q querier, id, columns string, extra ...any) (history.Conversation, error) {
	row := q.QueryRowContext(ctx, `SELECT `+columns+` FROM conversations c WHERE id = ?1`, id)
	c, err := s.scanConversation(extraRow{row, extra})
	if errors.Is(err, sql.ErrNoRows) {
		return history.Conversation{}, fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
	}
	if errors.Is(err, history.ErrDamaged) {
		return history.Conversation{}, err
	}
	if err != nil {
		return history.Conversation{}, s.explain("reading conversation "+id, err)
	}
	return c, nil
}

// recordColumns are what Get, List and Children read of a conversation
// (c), for scanConversation: its count of stored messages beside the count
// appended.
// A fork's or branch's count includes the base_at messages it shares.
const recordColumns = `c.id, c.system, c.created, c.updated,
		(SELECT COUNT(*) FROM messages WHERE conversation = c.id) + c.base_at, ` + recordRest

// recordColumnsAsStored are recordColumns without the count of the
// rows: the count appended stands for it. For the read of a conversation
// whole (messagesOnce), which steps every row anyway and compares them
// with the count appended, read in the same statement as the rows: at
// 100,000 messages the count took 8–37 ms, and a restart counted twice
// (Get, then this read).
const recordColumnsAsStored = `c.id, c.system, c.created, c.updated, c.messages, ` + recordRest

// recordRest are the columns of a record after its count.
const recordRest = `c.messages, c.crc, c.parent, c.parent_call, c.updated_crc,
		c.base, c.base_at, c.branch_of, c.base_crc`

type scanner interface{ Scan(...any) error }

// extraRow is a row as a scanner whose columns after those scanned go
// to extra.
type extraRow struct {
	row   scanner
	extra []any
}

// Scan scans r's columns into dest followed by r.extra.
func (r extraRow) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

// scanConversation reads a conversation's record and checks it: against
// its checksums, its times, and that it holds as many messages as were
// appended to it.
func (s *Store) scanConversation(row scanner) (history.Conversation, error) {
	var c history.Conversation
	var created, updated string
	var appended int
	var crc, updatedCRC, baseCRC int64
	if err := row.Scan(&c.ID, &c.System, &created, &updated, &c.Messages, &appended, &crc, &c.Parent, &c.ParentCall, &updatedCRC,
		&c.Base, &c.BaseAt, &c.BranchOf, &baseCRC); err != nil {
		return c, err
	}
	if err := s.checkBase(c.ID, c.Base, c.BaseAt, c.BranchOf, baseCRC); err != nil {
		return c, err
	}
	if err := s.checkRecord(c.ID, c.System, created, c.Parent, c.ParentCall, crc); err != nil {
		return c, err
	}
	if sum := record.UpdatedChecksum(c.ID, updated); sum != updatedCRC {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: its last update time (%q) no longer matches its checksum (stored %08x, now %08x): %w", s.path, c.ID, updated, updatedCRC, sum, history.ErrDamaged)
	}
	if c.Messages != appended {
		return c, fmt.Errorf("history store %s: conversation %s holds %d messages, but %d were stored in it: %w", s.path, c.ID, c.Messages, appended, history.ErrDamaged)
	}
	var err1, err2 error
	c.Created, err1 = time.Parse(record.TimeFormat, created)
	c.Updated, err2 = time.Parse(record.TimeFormat, updated)
	if err := errors.Join(err1, err2); err != nil {
		return c, fmt.Errorf("history store %s: the record of conversation %s is damaged: %v: %w", s.path, c.ID, err, history.ErrDamaged)
	}
	return c, nil
}

// checkRecord checks the fields of a conversation's record that never
// change against their checksum (record.RecordChecksum).
func (s *Store) checkRecord(id, system, created, parent, parentCall string, crc int64) error {
	if sum := record.RecordChecksum(id, system, created, parent, parentCall); sum != crc {
		return fmt.Errorf("history store %s: the record of conversation %s is damaged: its id, system prompt, creation time or parent no longer match their checksum (stored %08x, now %08x): %w", s.path, id, crc, sum, history.ErrDamaged)
	}
	return nil
}

// List returns the conversations, most recently updated first; branches
// are left out (Branches lists them).
func (s *Store) List(ctx context.Context) ([]history.Conversation, error) {
	return s.records(ctx, "listing conversations", `SELECT `+recordColumns+` FROM conversations c WHERE branch_of = '' ORDER BY updated DESC, id`)
}

// Children returns the conversations whose Parent is id, oldest first
// (see Family).
func (s *Store) Children(ctx context.Context, id string) ([]history.Conversation, error) {
	if id == "" {
		return nil, nil
	}
	out, err := s.records(ctx, "listing the conversations started by "+id, `SELECT `+recordColumns+` FROM conversations c WHERE parent = ?`, id)
	history.SortChildren(out) // created is text of varying length: ordered as times here
	return out, err
}

// records reads the conversation records query gives, checked.
func (s *Store) records(ctx context.Context, doing, query string, args ...any) ([]history.Conversation, error) {
	return s.recordsIn(ctx, s.db, doing, query, args...)
}

// recordsIn is records run in q (getIn).
func (s *Store) recordsIn(ctx context.Context, q querier, doing, query string, args ...any) ([]history.Conversation, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.explain(doing, err)
	}
	defer rows.Close()
	var out []history.Conversation
	for rows.Next() {
		c, err := s.scanConversation(rows)
		if errors.Is(err, history.ErrDamaged) {
			return nil, err
		}
		if err != nil {
			return nil, s.explain(doing, err)
		}
		out = append(out, c)
	}
	return out, s.wrapErr(doing, rows.Err())
}

func (s *Store) wrapErr(doing string, err error) error {
	if err == nil {
		return nil
	}
	return s.explain(doing, err)
}

// Messages returns a conversation's messages in order. The slice and the
// messages in it are shared with the store's memory: callers must not
// modify them.
//
// A fork's (or branch's) first BaseAt messages are its base's, read by
// Messages of the base (from the store's memory when it was read), and
// then its own, numbered from BaseAt+1.
//
// A read whole — its record, the messages it shares down its bases and
// its rows — runs in one read transaction: what it returns is the
// conversation at one moment. A read of what was added after the
// messages kept is one statement.
//
// Under the claim of the writer that appended to it last through this
// store, it reads nothing back (cache.go, ownMessages).
func (s *Store) Messages(ctx context.Context, id string) ([]history.Message, error) {
	if msgs, ok := s.ownMessages(ctx, id); ok {
		return msgs, nil
	}
	return s.messages(ctx, nil, id, 0)
}

// selectNewTagged reads conversation ?3 after its first ?2 messages:
// first the conversation's own row (no row at all: the conversation is
// not in the store), with its readTag at message ?1 as it is now (its
// base, base_at, and the checksum of the row holding its message ?1:
// heldCRC, its own row's where it has one), its count of
// messages appended and how many rows it holds numbered at or below its
// base_at (none unless damaged: its own are numbered from base_at+1;
// Get's COUNT(*) counts them too), then its message rows after ?2 in
// order, each with NULL in those five columns. All in one statement, one snapshot: the
// rows are counted against that count (readRows). The conversation's
// columns come once, not on every row as a join gave them: stepping four
// columns more per row made stepping 100,000 rows ~1.3× dearer (a
// scratch benchmark, issue 34). The checksum's subquery names the
// conversation by the parameter, not by c.id: a subquery naming a column
// of the outer row is evaluated again for every row, an index search per
// message, which doubled the cost of stepping a long conversation read
// whole after a restart; one naming only parameters is evaluated once, to
// the same value. ORDER BY 1 puts the conversation's row (seq NULL)
// first; SQLite merges the two parts, each in its order, without sorting.
var selectNewTagged = `SELECT NULL, NULL, NULL, c.base, c.base_at, ` + heldCRC("?3", "?1") + `, c.messages,
		(SELECT COUNT(*) FROM messages WHERE conversation = ?3 AND seq <= (SELECT base_at FROM conversations WHERE id = ?3))
	FROM conversations c WHERE c.id = ?3
	UNION ALL SELECT m.seq, m.message, m.crc, NULL, NULL, NULL, NULL, NULL FROM messages m WHERE m.conversation = ?3 AND m.seq > ?2
	ORDER BY 1`

// maxBases bounds how many bases a read follows down: a record whose
// bases lead back to itself (made by hand: no Fork, Rewind or Switch
// makes one) is reported, not followed for ever.
const maxBases = 10_000

// errMoved is what a read of a conversation returns when what it kept
// of it was moved since (by a rewind or switch, of this opening or
// another): its readTag is not the one its rows are read at now. What was
// kept is dropped and the read done again, whole.
var errMoved = errors.New("moved while read")

// maxRereads is how many times a read moved under it is done again before
// it gives up, saying so.
const maxRereads = 5

// whileReading, when not nil, is called by a read whole of conversation id
// between its statements, at point "record" (its record read) and "base"
// (the messages it shares with its base read): for tests only, which
// stand in for another opening writing there. Nil in production (one
// comparison a read whole).
var whileReading func(id, point string)

// messages is Messages of id, read as the depth-th base of the
// conversation asked for, in tx (nil: a transaction of its own where it
// needs one): read again while what it kept of id turns out moved since
// (errMoved), so that it returns what the conversation held at one
// moment, never a mixture.
func (s *Store) messages(ctx context.Context, tx *rawTx, id string, depth int) ([]history.Message, error) {
	if depth > maxBases {
		return nil, fmt.Errorf("history store %s: conversation %s: its bases lead back to it (more than %d of them): %w", s.path, id, maxBases, history.ErrDamaged)
	}
	for try := 1; ; try++ {
		msgs, err := s.messagesOnce(ctx, tx, id, depth)
		if !errors.Is(err, errMoved) {
			return msgs, err
		}
		s.dropRead(id)
		if try == maxRereads {
			return nil, fmt.Errorf("history store %s: reading conversation %s: the messages it holds or shares kept being moved (rewound or switched while read): try again", s.path, id)
		}
	}
}

// messagesOnce is one try of messages: errMoved when what it kept of id
// moved since. A read of the rows after those kept (the round's) is one
// statement (selectNewTagged), its own snapshot; a read whole — the
// record, the messages shared with the base (read as the base's, down
// the chain), and the rows — runs in one read transaction (tx, or one
// begun here), so that its statements see the store at one moment: read
// in three, a rewind of the base and a switch back between them read a
// fork as messages it never held, under a tag that then held
// (TestAForkReadWholeIsOneMomentWhileItsBaseIsRewoundAndSwitchedBack).
func (s *Store) messagesOnce(ctx context.Context, tx *rawTx, id string, depth int) ([]history.Message, error) {
	s.mu.Lock()
	s.settle(id)
	known, tag := s.read[id], s.tags[id]
	if s.start[id] > 0 {
		// kept from a mark's place on (Marked): read whole, and kept
		// whole from then on
		known, tag = nil, readTag{}
	}
	s.mu.Unlock()
	if len(known) == 0 && tx == nil {
		var msgs []history.Message
		err := s.rawRead(ctx, "reading conversation "+id, func(tx rawTx) (err error) {
			msgs, err = s.messagesOnce(ctx, &tx, id, depth)
			return err
		})
		if errors.Is(err, history.ErrNotFound) {
			// deleted: one made again under its id starts empty (forget
			// waits for the sent cache, whose holder may wait for the
			// connection: not in the transaction)
			s.forget(id)
		}
		return msgs, err
	}
	// read beside the rows after known: still tag?
	now := &readTag{n: len(known)}
	size, after := len(known), len(known)
	// The new messages go to fresh, then at the end of s.read[id] (in
	// place while it has room), never into what a caller holds.
	var fresh []history.Message
	if len(known) == 0 {
		// its rows are counted as they are stepped (readRows), not here;
		// the tag's checksum is of the row its base_at-th message is
		// read from, as the rows' statement gives it (in the same
		// snapshot: the same)
		tag = readTag{crc: noRow}
		c, err := s.wholeRecord(*tx, id, &tag.crc)
		if err != nil {
			return nil, err
		}
		if whileReading != nil {
			whileReading(id, "record")
		}
		size = c.Messages
		tag.n, tag.base, tag.baseAt = c.BaseAt, c.Base, c.BaseAt
		now = &readTag{n: c.BaseAt}
		fresh = make([]history.Message, 0, size+size/8+64) // room for the rounds to come
		if c.Base != "" && c.BaseAt > 0 {
			shared, err := s.messages(ctx, tx, c.Base, depth+1)
			if errors.Is(err, history.ErrNotFound) {
				// its base is not in the store its record was read
				// from: the fork is damaged, not missing
				return nil, fmt.Errorf("history store %s: conversation %s shares the first %d messages of %s, which is not in the store: %w", s.path, id, c.BaseAt, c.Base, history.ErrDamaged)
			}
			if err != nil {
				return nil, fmt.Errorf("reading the messages conversation %s shares with %s: %w", id, c.Base, err)
			}
			if len(shared) < c.BaseAt {
				return nil, fmt.Errorf("history store %s: conversation %s shares the first %d messages of %s, which holds %d: %w", s.path, id, c.BaseAt, c.Base, len(shared), history.ErrDamaged)
			}
			fresh = append(fresh, shared[:c.BaseAt]...)
			after = c.BaseAt
			if whileReading != nil {
				whileReading(id, "base")
			}
		}
	}
	d := newRowDecoder(s, id, size)
	var got stepped
	var scanErr error
	if tx != nil {
		got, scanErr = s.readTaggedOn(*tx, id, after, now, d)
	} else {
		got, scanErr = s.readRows(ctx, id, after, now, d)
	}
	fresh, decodeErr := d.Finish(fresh)
	if scanErr != nil {
		return nil, s.explain("reading conversation "+id, scanErr)
	}
	if !got.found {
		if tx != nil {
			s.dropRead(id) // forgotten when the transaction ends
		} else {
			s.forget(id)
		}
		return nil, record.NotFound(id)
	}
	if got.below > 0 {
		// rows where none of its own can be (Get's count reports them
		// too), one of them perhaps the row the tag looks at: damage,
		// not a move, whatever the tag says
		return nil, fmt.Errorf("history store %s: conversation %s holds %d rows numbered %d or below, where its own are numbered from %d: %w", s.path, id, got.below, now.baseAt, now.baseAt+1, history.ErrDamaged)
	}
	if *now != tag {
		// moved by a rewind or switch (of this opening or another) since
		// what was kept was read: read again whole
		return nil, errMoved
	}
	tag = *now
	// every row after known counted, against the count appended read
	// with them: a row lost or added behind the store's back (Get's
	// check, made here as the rows are stepped)
	if held := after + got.rows; held != got.appended {
		return nil, fmt.Errorf("history store %s: conversation %s holds %d messages, but %d were stored in it: %w", s.path, id, held, got.appended, history.ErrDamaged)
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	if got.missing != nil {
		return nil, got.missing
	}
	if n := len(known) + len(fresh); n < size {
		// the rows counted are the count appended, but fewer than the
		// record read before them, in the same snapshot, said
		return nil, fmt.Errorf("history store %s: conversation %s: messages %d to %d are missing (%d stored): %w", s.path, id, n+1, size, size, history.ErrDamaged)
	}
	if d.last > 0 {
		tag.n, tag.crc = d.last, d.lastCRC
	}
	return s.extend(id, known, fresh, tag), nil
}

// wholeRecord is conversation id's record as a read whole reads it, in
// tx (wholeRecordSQL), checked as Get checks it (its count the count
// appended), with crc the checksum of the row its base_at-th message is
// read from (noRow: none).
func (s *Store) wholeRecord(tx rawTx, id string, crc *int64) (history.Conversation, error) {
	c, err := s.scanConversation(rawRow{tx: tx, st: tx.st.wholeRecord, args: []any{id}, extra: []any{crc}})
	if errors.Is(err, sql.ErrNoRows) {
		s.dropRead(id) // forgotten when the transaction ends (messagesOnce)
		return history.Conversation{}, record.NotFound(id)
	}
	if errors.Is(err, history.ErrDamaged) {
		return history.Conversation{}, err
	}
	if err != nil {
		return history.Conversation{}, s.explain("reading conversation "+id, err)
	}
	return c, nil
}

// wholeRecordSQL is conversation ?1's record as a read whole reads it:
// recordColumnsAsStored, then the checksum of the row its base_at-th
// message is read from (noRow: none), the tag's.
var wholeRecordSQL = `SELECT ` + recordColumnsAsStored + `, COALESCE(` + baseRowCRC("?1", "x.base_at") + `, ` + fmt.Sprint(noRow) + `) FROM conversations c WHERE c.id = ?1`

// Append adds messages in one transaction, after checking the writer's
// claim in it; when it returns nil they are on disk (under Lazy: in the
// log, safe from a crash of the process).
func (s *Store) Append(ctx context.Context, id string, msgs ...history.Message) error {
	doing := "appending to conversation " + id
	var after readTag // the conversation before these: how many it held, and at what
	var raws [][]byte // the messages as stored
	var mark markID   // its mark as the append found it
	// once committed (synced or not) the messages are kept as stored;
	// under the writer's claim, checked in the transaction, the
	// conversation is then what the store keeps. A synced append decodes
	// what was kept undecoded while its sync waits for the disk.
	lazy := history.IsLazy(ctx)
	kept := func() {
		var owner *history.Holder
		if w, ok := history.WriterOf(ctx); ok {
			owner = &w
		}
		if s.keepAppended(id, after, raws, mark, owner) {
			if !lazy {
				s.settled(id)
			}
		}
	}
	return s.rawWriteAnd(ctx, doing, lazy, func(tx rawTx) error {
		var last, appended int
		var cl nullClaim
		err := tx.queryRow(tx.st.nextSeq, []any{id}, &last, &appended,
			&cl.token, &cl.pid, &cl.host, &cl.node, &cl.since, &cl.expires, &after.base, &after.baseAt, &after.crc, &mark.from, &mark.crc)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("conversation %s: %w", id, history.ErrNotFound)
		}
		if err != nil {
			return s.explain(doing, err)
		}
		if last != appended {
			return fmt.Errorf("history store %s: %s: its last message is number %d, but %d were stored in it: %w", s.path, doing, last, appended, history.ErrDamaged)
		}
		next := last + 1
		after.n, raws = last, make([][]byte, 0, len(msgs))
		c, ok := cl.row()
		if err := s.claimAllows(ctx, id, c, ok); err != nil {
			return err
		}
		now := time.Now().UTC()
		results := false
		for i, m := range msgs {
			m.Time = now
			raw, err := result.JSON(m)
			if err != nil {
				return fmt.Errorf("appending to conversation %s: %w", id, err)
			}
			if err := tx.exec(tx.st.insert, id, next+i, raw, record.MessageChecksum(id, next+i, raw)); err != nil {
				return s.explain(doing, err)
			}
			raws = append(raws, raw)
			for _, p := range m.Parts {
				results = results || p.Type == history.ToolResultPart
			}
		}
		if results {
			// the round's results are stored: what was kept of it goes
			if err := tx.exec(tx.st.dropKept, id); err != nil {
				return s.explain(doing, err)
			}
		}
		updated := now.Format(record.TimeFormat)
		if err := tx.exec(tx.st.touch, updated, record.UpdatedChecksum(id, updated), len(msgs), id); err != nil {
			return s.explain(doing, err)
		}
		return nil
	}, kept)
}
