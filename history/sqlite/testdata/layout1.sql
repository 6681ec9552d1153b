-- A store of layout 1 (before claims and kept results), with one
-- conversation of one message, as myelin wrote it.
CREATE TABLE conversations (
	id      TEXT PRIMARY KEY,
	system  TEXT NOT NULL,
	created TEXT NOT NULL,
	updated TEXT NOT NULL
);
CREATE TABLE messages (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	seq          INTEGER NOT NULL,
	message      BLOB NOT NULL,
	PRIMARY KEY (conversation, seq)
);
CREATE INDEX conversations_updated ON conversations(updated);
INSERT INTO conversations VALUES ('old', 'be brief', '2026-11-01T10:00:00Z', '2026-11-01T10:00:00Z');
INSERT INTO messages VALUES ('old', 1, '{"role":"user","parts":[{"type":"text","text":"hello"}],"time":"2026-11-01T10:00:00Z"}');
PRAGMA user_version = 1;
