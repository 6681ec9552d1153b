// Package postgres is a history.Store (and history.Requests) kept in a
// PostgreSQL database, for several myelin processes on several hosts that
// share one history. It keeps the same records as the SQLite store, byte
// for byte — a message is the same JSON bytes (bytea), under the same
// checksum — so that a request built from either store is the same
// (contract §7), and the same one-writer claim, done the Postgres way: a
// claims row whose epoch grows with every takeover, checked on every write
// in the write's own transaction under the conversation's row lock, so a
// writer that lost its claim appends nothing (fencing). Leases run on the
// database's clock, never a host's.
//
// It also keeps conversations' workspace files (history.Blobs, blobs.go),
// shared by every host on the database, and the providers' rate limits
// the processes on the database share (RateLimits, ratelimits.go).
//
// It owns its tables and their migrations; it must not convert tool results
// (package result does), know provider wires, or keep a claim in memory.
// The workers' job queue is another package's.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// Options tune a Postgres store; the zero value is the default.
type Options struct {
	// Schema, when set, is the schema the store's tables are in (made if
	// missing); by default they are in the connection's search_path (the
	// DSN may set it), normally public. Tests give each run its own.
	Schema string
	// Now is for tests: when set, claims are timed by it instead of the
	// database's clock, so a test can let a lease run out without
	// sleeping. It must stay nil in production, where hosts' clocks
	// differ and only the database's is shared.
	Now func() time.Time
}

// Store is a history.Store in a PostgreSQL database. It is safe for
// concurrent use, by goroutines and by processes on any host sharing the
// database. It keeps the messages it has read in memory: stored messages
// never change, so a later Messages reads only the rows added since (by
// this process or another), after checking, in the same query, that the
// conversation was not rewound or switched since (which moves its rows
// after a point: then it is read again). A Marked keeps only the messages
// from the conversation's mark on (marks.go), and reads on from them the
// same way; a Messages of such a conversation reads it whole once.
type Store struct {
	pool *pgxpool.Pool
	name string // the server and database, for errors: no password
	now  func() time.Time

	mu   sync.Mutex
	read map[string]read // per conversation, the messages read so far

	sent record.SentBodies // the newest request body of some conversations (requests.go)
}

var (
	_ history.Store    = (*Store)(nil)
	_ history.Requests = (*Store)(nil)
	_ history.Marker   = (*Store)(nil)
)

// connectTimeout bounds connecting when the DSN sets no connect_timeout:
// an unreachable server is an error at Open, not a hang.
const connectTimeout = 10 * time.Second

// idleInWrite is how long the server lets one of the store's sessions sit
// idle inside a transaction — its process paused, frozen or cut off in the
// middle of a write, holding the conversation's row lock — before it ends
// the session, rolling the write back and freeing the conversation for
// the next holder, who would otherwise wait on the lock for as long as
// the pause (or until TCP notices a partition, hours). A write is never
// idle that long: its statements follow each other at once. A DSN that
// sets idle_in_transaction_session_timeout keeps its own.
const idleInWrite = history.DefaultLease

// idleParam is the server setting idleInWrite is given as.
const idleParam = "idle_in_transaction_session_timeout"

// Open connects to the database dsn names (a postgres:// or postgresql://
// URL, or key=value pairs, as libpq takes them), brings its tables to this
// myelin's layout (migrate) and returns the store. A DSN that does not
// parse, a server that cannot be reached or refuses the login, and a
// database of a newer layout are errors that say so, naming the server
// and database but never the password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("history store: the Postgres connection string is not valid (want postgres://user@host:port/database, or key=value pairs): %v", redact(err, dsn)) // %v, not %w: the cause may hold the password
	}
	cc := cfg.ConnConfig
	name := "postgres://" + cc.User + "@" + net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))) + "/" + cc.Database
	if opts.Schema != "" {
		name += " (schema " + opts.Schema + ")"
		cc.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize() // quoted: the one schema, whatever its name
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	if _, set := cc.RuntimeParams[idleParam]; !set {
		cc.RuntimeParams[idleParam] = strconv.FormatInt(idleInWrite.Milliseconds(), 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history store %s: %w", name, err)
	}
	s := &Store{pool: pool, name: name, now: opts.Now, read: map[string]read{}}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("history store %s: cannot connect: %w", name, err)
	}
	if err := s.migrate(ctx, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// redact takes the DSN's password out of a parse error's text where it
// stands in the DSN — after the user's colon, after password= — and
// nowhere else: a password of a letter or two must not garble the
// error's words.
func redact(err error, dsn string) string {
	msg := err.Error()
	for _, p := range passwords(dsn) {
		msg = strings.ReplaceAll(msg, ":"+p+"@", ":xxxxx@")
		msg = strings.ReplaceAll(msg, "password="+p, "password=xxxxx")
	}
	return msg
}

// passwords are the strings in dsn that may be a password: after the
// user's colon in a URL, after password= in key=value pairs.
func passwords(dsn string) []string {
	var out []string
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		if scheme := strings.Index(dsn, "://"); scheme >= 0 && scheme+3 < at {
			userinfo := dsn[scheme+3 : at]
			if c := strings.Index(userinfo, ":"); c >= 0 && c+1 < len(userinfo) {
				out = append(out, userinfo[c+1:])
			}
		}
	}
	if i := strings.Index(dsn, "password="); i >= 0 {
		v := dsn[i+len("password="):]
		if end := strings.Index(v[min(1, len(v)):], "'"); strings.HasPrefix(v, "'") && end >= 0 {
			v = v[:end+2] // quoted, quotes and all
		} else if j := strings.IndexAny(v, " &"); j >= 0 {
			v = v[:j]
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Close closes the store's connections.
func (s *Store) Close() error { s.pool.Close(); return nil }

// explain makes a database error say what the store was doing, and where.
func (s *Store) explain(doing string, err error) error {
	return fmt.Errorf("history store %s: %s: %w", s.name, doing, err)
}

// isCode reports whether err is the database's error of SQLSTATE code.
func isCode(err error, code string) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == code
}

// clockArg is the time a statement takes as "now" for claims: nil (SQL
// NULL, so the statement's COALESCE falls to the database's now()) unless
// a test set Options.Now.
func (s *Store) clockArg() any {
	if s.now == nil {
		return nil
	}
	return s.now().UTC()
}

// hostNow is the time messages and records are stamped with: this host's
// clock (as SQLite stamps them), or the test clock.
func (s *Store) hostNow() time.Time {
	if s.now != nil {
		return s.now().UTC()
	}
	return time.Now().UTC()
}

// readCommitted is how every write's transaction (and the migration's)
// begins, whatever the database's default_transaction_isolation: each
// statement sees what was committed before it started, so a write that
// waited for a lock (the conversation's row, the migration's advisory
// lock) sees what the one before it committed, where REPEATABLE READ or
// SERIALIZABLE would fail it with a serialization error, or read the
// layout as it was before the wait.
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// migrations are the store's layouts: migrations[i] brings layout i to
// i+1 (0 is an empty schema). A migration is added at the end, never
// changed once released.
var migrations = []string{
	// 1: conversations, messages, claims, kept results, requests
	`CREATE TABLE conversations (
		id       text PRIMARY KEY,
		system   bytea NOT NULL,       -- bytes, as SQLite keeps them: text refuses NUL and what is not UTF-8
		created  text NOT NULL,        -- record.TimeFormat, as SQLite keeps it (the checksum covers it)
		updated  timestamptz NOT NULL,
		messages integer NOT NULL DEFAULT 0, -- how many messages it holds
		crc      bigint NOT NULL               -- record.RecordChecksum(id, system, created, parent, parent_call)
	);
	CREATE TABLE messages (
		conversation text NOT NULL REFERENCES conversations(id),
		seq          integer NOT NULL,
		message      bytea NOT NULL,  -- history.EncodeMessage: the bytes SQLite keeps
		crc          bigint NOT NULL, -- record.MessageChecksum(conversation, seq, message)
		PRIMARY KEY (conversation, seq)
	);
	CREATE TABLE claims (
		conversation text PRIMARY KEY REFERENCES conversations(id),
		token        text NOT NULL,   -- '' once released
		pid          integer NOT NULL,
		host         text NOT NULL,
		node         text NOT NULL,
		since        timestamptz NOT NULL,
		expires      timestamptz NOT NULL, -- on the database's clock
		epoch        bigint NOT NULL       -- grows with every takeover: the fencing number
	);
	CREATE TABLE kept (
		conversation text NOT NULL REFERENCES conversations(id),
		call_id      bytea NOT NULL, -- bytes: a call id may hold a NUL
		part         bytea NOT NULL, -- history.EncodePart
		PRIMARY KEY (conversation, call_id)
	);
	CREATE TABLE requests (
		conversation text NOT NULL REFERENCES conversations(id),
		n      integer NOT NULL,
		base   integer NOT NULL, -- 0: tail is the whole body; else n-1
		prefix integer NOT NULL, -- bytes shared with request base
		tail   bytea NOT NULL,
		meta   text NOT NULL,    -- the SentRequest as JSON, its body left out
		PRIMARY KEY (conversation, n)
	);`,
	// 2: conversations' workspace files (history.Blobs, blobs.go)
	`CREATE TABLE blobs (
		hash text PRIMARY KEY, -- history.BlobHash(data)
		data bytea NOT NULL
	);
	CREATE TABLE blob_files (
		conversation text NOT NULL REFERENCES conversations(id),
		path         bytea NOT NULL, -- workspace-relative, as given: bytes, as SQLite keeps them
		hash         text NOT NULL REFERENCES blobs(hash),
		PRIMARY KEY (conversation, path)
	);`,
	// 3: the link of a conversation a tool call started (a subagent's) to
	// that call (history.Conversation.Parent, ParentCall), and the index
	// Children reads; unlinked records keep their checksums
	`ALTER TABLE conversations ADD COLUMN parent text NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN parent_call text NOT NULL DEFAULT '';
	CREATE INDEX conversations_parent ON conversations(parent) WHERE parent <> '';`,
	// 4: a checksum of each conversation's last update time, the one
	// field of a record that changes and that no checksum covered (it
	// orders List: it decides what --continue continues); filled in by
	// fillUpdatedChecksums
	`ALTER TABLE conversations ADD COLUMN updated_crc bigint NOT NULL DEFAULT 0; -- record.UpdatedChecksum(id, updated)`,
	// 5: forks and branches (history.Brancher, branch.go): the messages a
	// conversation shares with another (base, base_at) and the one it is
	// a branch of, under a checksum of their own that is 0 for a record
	// sharing nothing, so that no older record needs it filled in; and
	// the indexes a rewind (who shares my messages?) and Branches read
	`ALTER TABLE conversations ADD COLUMN base text NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN base_at integer NOT NULL DEFAULT 0; -- its first base_at messages are base's; its own rows are numbered from base_at+1
	ALTER TABLE conversations ADD COLUMN branch_of text NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN base_crc bigint NOT NULL DEFAULT 0; -- record.BaseChecksum(id, base, base_at, branch_of)
	CREATE INDEX conversations_base ON conversations(base) WHERE base <> '';
	CREATE INDEX conversations_branch_of ON conversations(branch_of) WHERE branch_of <> '';`,
	// 6: the providers' rate limits the processes on the database share
	// (RateLimits, ratelimits.go): a row per limiter, never a key. Its
	// SQL, applied as written, says updated_at is the observing host's
	// clock; since layout 7 every time in the row is the database's
	// (clock_timestamp(), ratelimits.go), so hosts' clocks never meet.
	`CREATE TABLE myelin_rate_limits (
		endpoint     text NOT NULL,
		identity     text NOT NULL,        -- ratelimit.Identity: a hash, never the key
		model        text NOT NULL,
		next_allowed timestamptz NOT NULL, -- only ever moves later
		remaining    bigint NOT NULL,      -- requests that may go at once after it; -1: no bound
		why          text NOT NULL,
		updated_at   timestamptz NOT NULL, -- when observed, by the observing host's clock
		PRIMARY KEY (endpoint, identity, model)
	);`,
	// 7: the requests let through on each rate limit, counted, so that
	// the processes spend one budget (RateLimits.Spend) and an answer's
	// budget counts the requests sent after its own (RateLimits.Save)
	`ALTER TABLE myelin_rate_limits ADD COLUMN sent bigint NOT NULL DEFAULT 0;     -- requests let through, ever: a request's ticket is sent as it went
	ALTER TABLE myelin_rate_limits ADD COLUMN answered bigint NOT NULL DEFAULT 0; -- the ticket of the answer that last set remaining
	ALTER TABLE myelin_rate_limits ADD COLUMN answers bigint NOT NULL DEFAULT 0;  -- answers observed: sent less answers are in flight
	ALTER TABLE myelin_rate_limits ADD COLUMN last_sent timestamptz NOT NULL DEFAULT '0001-01-01 00:00:00+00'; -- when a request was last let through (ratelimit.Limiter.Probe)`,
	// 8: a conversation's mark (history.Marker, marks.go): the place of
	// the first message its reader needs and the reader's facts of those
	// before it; a row only while one is set. A myelin of layout 7 refuses
	// this layout at Open; one already running when a newer one brings
	// the database to it does not know marks, and its Rewind and Switch
	// would leave them standing over messages they moved: the trigger
	// drops a conversation's mark whenever an UPDATE names its base_at,
	// which their UPDATE of the record does (since layout 5) and an
	// Append's, a fork's and a repoint's never do; and its Delete, which
	// knows nothing of marks either, takes the mark along (ON DELETE
	// CASCADE). The trigger runs with the rights of the role that
	// updates: a role granted only the tables of layout 7 cannot rewind
	// (docs/scale.md, Migrations).
	`CREATE TABLE conversation_marks (
		conversation text PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
		"from"       integer NOT NULL, -- the place (from 0) of the first message the reader needs: 1 or more
		facts        bytea NOT NULL,   -- the reader's, kept as given
		stamp        bigint NOT NULL,  -- random, new with every mark set: what a store that read the mark compares
		crc          bigint NOT NULL   -- markChecksum(conversation, from, facts)
	);
	CREATE FUNCTION myelin_drop_mark() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		-- the marks beside the conversations table, whatever the session's search_path or the schema's name
		EXECUTE format('DELETE FROM %I.conversation_marks WHERE conversation = $1', TG_TABLE_SCHEMA) USING NEW.id;
		RETURN NULL;
	END $$;
	CREATE TRIGGER conversation_moved_drops_mark AFTER UPDATE OF base_at ON conversations
		FOR EACH ROW EXECUTE FUNCTION myelin_drop_mark();`,
}

// fills are what a migration computes in Go, after its SQL, in its
// transaction: fills[i] after migrations[i].
var fills = map[int]func(ctx context.Context, tx pgx.Tx) error{
	3: fillUpdatedChecksums,
}

// fillUpdatedChecksums computes the checksum of every conversation's last
// update time (layout 4), taken as it is.
func fillUpdatedChecksums(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT id, updated FROM conversations`)
	if err != nil {
		return err
	}
	var ids []string
	var sums []int64
	for rows.Next() {
		var id string
		var updated time.Time
		if err := rows.Scan(&id, &updated); err != nil {
			rows.Close()
			return err
		}
		ids, sums = append(ids, id), append(sums, updatedChecksum(id, updated))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE conversations c SET updated_crc = v.crc FROM unnest($1::text[], $2::bigint[]) AS v(id, crc) WHERE c.id = v.id`, ids, sums)
	return err
}

// updatedChecksum is record.UpdatedChecksum of a last update time as
// Postgres keeps it (a timestamptz, to the microsecond): of TimeFormat of
// the time in UTC. A time is stored already cut to the microsecond
// (toMicro), so what is checksummed is what is read back.
func updatedChecksum(id string, updated time.Time) int64 {
	return record.UpdatedChecksum(id, updated.UTC().Format(record.TimeFormat))
}

// toMicro is t cut to the microsecond, as Postgres keeps a timestamptz
// (it would round t instead).
func toMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Layout is the store layout this myelin reads and writes.
var Layout = len(migrations)

// migrate brings the database to Layout in one transaction under an
// advisory lock (one for the database), so that processes opening it at
// once wait for each other and find it made, never half made. A database
// of this layout is only read: a role that may not create tables opens it. A database of a newer layout is
// refused, saying so.
func (s *Store) migrate(ctx context.Context, schema string) error {
	doing := "bringing the tables to layout " + strconv.Itoa(Layout)
	// made already: nothing to make, so nothing a role that may only read
	// and write the tables is refused (CREATE ... IF NOT EXISTS is)
	var made bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('myelin_layout') IS NOT NULL`).Scan(&made); err != nil {
		return s.explain(doing, err)
	}
	if made {
		version := -1
		err := s.pool.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return s.explain(doing, err)
		}
		if version > Layout {
			return s.newerLayout(version)
		}
		if version == Layout {
			return nil
		}
	}
	tx, err := s.pool.BeginTx(ctx, readCommitted)
	if err != nil {
		return s.explain(doing, err)
	}
	defer tx.Rollback(ctx)
	// one lock for the database, whatever the schema: a schema named by
	// Options.Schema in one process and by the URL's search_path in
	// another is one schema, and two migrations of it at once collide
	key := fnv.New64a()
	key.Write([]byte("myelin history migrate"))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(key.Sum64())); err != nil {
		return s.explain(doing, err)
	}
	if schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return s.explain("making schema "+schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS myelin_layout (version integer NOT NULL)`); isCode(err, "3F000") {
		_ = tx.Rollback(ctx) // its connection back first: the pool may have one
		var path string
		_ = s.pool.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path)
		return fmt.Errorf("history store %s: the connection's search_path (%q) names no schema that exists: create the schema, or set ?search_path= to one that does", s.name, path)
	} else if err != nil {
		return s.explain(doing, err)
	}
	version := -1
	err = tx.QueryRow(ctx, `SELECT version FROM myelin_layout`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		version = 0
		_, err = tx.Exec(ctx, `INSERT INTO myelin_layout (version) VALUES (0)`)
	}
	if err != nil {
		return s.explain(doing, err)
	}
	if version > Layout {
		return s.newerLayout(version)
	}
	if version == Layout {
		return nil
	}
	for v := version; v < Layout; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return s.explain(fmt.Sprintf("bringing the tables from layout %d to %d", v, v+1), err)
		}
		if fill := fills[v]; fill != nil {
			if err := fill(ctx, tx); err != nil {
				return s.explain(fmt.Sprintf("bringing the tables from layout %d to %d", v, v+1), err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE myelin_layout SET version = $1`, Layout); err != nil {
		return s.explain(doing, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.explain(doing, err)
	}
	return nil
}

// newerLayout is the error for a database of layout version, newer than
// this myelin's.
func (s *Store) newerLayout(version int) error {
	return fmt.Errorf("history store %s has layout %d, and this myelin reads layout %d: use a myelin that matches it, or another --store", s.name, version, Layout)
}

// String names the store for people: its server, user and database (and
// schema), never the password.
func (s *Store) String() string { return s.name }
