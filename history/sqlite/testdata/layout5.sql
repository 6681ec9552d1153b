-- A store of layout 5 (a checksum of each conversation's last update time,
-- no forks or branches), with one conversation of one message, as myelin
-- wrote it.
CREATE TABLE conversations (
	id      TEXT PRIMARY KEY,
	system  TEXT NOT NULL,
	created TEXT NOT NULL,
	updated TEXT NOT NULL,
	messages INTEGER NOT NULL DEFAULT 0,
	crc      INTEGER NOT NULL DEFAULT 0,
	parent      TEXT NOT NULL DEFAULT '',
	parent_call TEXT NOT NULL DEFAULT '',
	updated_crc INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_parent ON conversations(parent) WHERE parent != '';
CREATE TABLE messages (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	seq          INTEGER NOT NULL,
	message      BLOB NOT NULL,
	crc          INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (conversation, seq)
);
CREATE TABLE claims (
	conversation TEXT PRIMARY KEY REFERENCES conversations(id),
	token        TEXT NOT NULL,
	pid          INTEGER NOT NULL,
	host         TEXT NOT NULL,
	node         TEXT NOT NULL,
	since        INTEGER NOT NULL,
	expires      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE kept (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	call_id      TEXT NOT NULL,
	part         BLOB NOT NULL,
	PRIMARY KEY (conversation, call_id)
) WITHOUT ROWID;
INSERT INTO conversations VALUES ('old', 'be brief', '2026-11-01T10:00:00Z', '2026-11-01T10:00:00Z', 1, 2631388058, '', '', 370537124);
INSERT INTO messages VALUES ('old', 1, '{"role":"user","parts":[{"type":"text","text":"hello"}],"time":"2026-11-01T10:00:00Z"}', 1850205562);
PRAGMA user_version = 5;
