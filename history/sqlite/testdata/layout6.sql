-- A store of layout 6 (forks and branches, no marks), with one conversation
-- of one message and a fork of it with one of its own, as myelin wrote it
-- (sqlite3's .dump of a store made by 41a9c90).
CREATE TABLE conversations (
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
INSERT INTO conversations VALUES('old','be brief','2026-11-01T10:00:00Z','2026-12-06T17:04:48.38095141Z',1,2631388058,'','',987444459,'',0,'',0);
INSERT INTO conversations VALUES('old-fork','be brief','2026-11-01T10:00:00Z','2026-12-06T17:04:48.382352302Z',2,2277141474,'','',214579902,'old',1,'',753686553);
CREATE TABLE messages (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	seq          INTEGER NOT NULL,
	message      BLOB NOT NULL, -- the Message as JSON (result.JSON), read by decodeMessage
	crc          INTEGER NOT NULL DEFAULT 0, -- messageChecksum (layout 3), checked as it is read
	PRIMARY KEY (conversation, seq)
);
INSERT INTO messages VALUES('old',1,X'7b22726f6c65223a2275736572222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a2268656c6c6f227d5d2c2274696d65223a22323032362d31322d30365431373a30343a34382e33383039353134315a227d',1394962702);
INSERT INTO messages VALUES('old-fork',2,X'7b22726f6c65223a22617373697374616e74222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a22666f726b6564227d5d2c2274696d65223a22323032362d31322d30365431373a30343a34382e3338323335323330325a227d',2619279816);
CREATE TABLE claims (
	conversation TEXT PRIMARY KEY REFERENCES conversations(id),
	token        TEXT NOT NULL,
	pid          INTEGER NOT NULL,
	host         TEXT NOT NULL,
	node         TEXT NOT NULL, -- Holder.Node: where pid means a process
	since        INTEGER NOT NULL, -- Unix nanoseconds
	expires      INTEGER NOT NULL  -- Unix nanoseconds
) WITHOUT ROWID;
CREATE TABLE kept (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	call_id      TEXT NOT NULL,
	part         BLOB NOT NULL, -- the Part as JSON (result.JSON)
	PRIMARY KEY (conversation, call_id)
) WITHOUT ROWID;
CREATE INDEX conversations_parent ON conversations(parent) WHERE parent != '';
CREATE INDEX conversations_base ON conversations(base) WHERE base != '';
CREATE INDEX conversations_branch_of ON conversations(branch_of) WHERE branch_of != '';
PRAGMA user_version = 6;
