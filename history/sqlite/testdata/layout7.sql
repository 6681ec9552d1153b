-- A store of layout 7 (marks in a table without rowids, facts before their
-- checksums), with one conversation of one message, a fork of it with one of
-- its own, and a conversation of three messages marked at 2, as myelin wrote
-- it (sqlite3's .dump of a store made by f133e91).
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
INSERT INTO conversations VALUES('old','be brief','2026-12-06T19:39:20.438487706Z','2026-12-06T19:39:20.439671173Z',1,4166260803,'','',2608052328,'',0,'',0);
INSERT INTO conversations VALUES('old-fork','be brief','2026-12-06T19:39:20.440390565Z','2026-12-06T19:39:20.440980504Z',2,2389454290,'','',1416049910,'old',1,'',753686553);
INSERT INTO conversations VALUES('marked','be brief','2026-12-06T19:39:20.441345575Z','2026-12-06T19:39:20.441747935Z',3,1408299643,'','',3399966768,'',0,'',0);
CREATE TABLE messages (
	conversation TEXT NOT NULL REFERENCES conversations(id),
	seq          INTEGER NOT NULL,
	message      BLOB NOT NULL, -- the Message as JSON (result.JSON), read by decodeMessage
	crc          INTEGER NOT NULL DEFAULT 0, -- messageChecksum (layout 3), checked as it is read
	PRIMARY KEY (conversation, seq)
);
INSERT INTO messages VALUES('old',1,X'7b22726f6c65223a2275736572222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a2268656c6c6f227d5d2c2274696d65223a22323032362d31322d30365431393a33393a32302e3433393637313137335a227d',918555926);
INSERT INTO messages VALUES('old-fork',2,X'7b22726f6c65223a22617373697374616e74222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a22666f726b6564227d5d2c2274696d65223a22323032362d31322d30365431393a33393a32302e3434303938303530345a227d',1382345726);
INSERT INTO messages VALUES('marked',1,X'7b22726f6c65223a2275736572222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a226f6e65227d5d2c2274696d65223a22323032362d31322d30365431393a33393a32302e3434313734373933355a227d',1602962744);
INSERT INTO messages VALUES('marked',2,X'7b22726f6c65223a22617373697374616e74222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a2274776f227d5d2c2274696d65223a22323032362d31322d30365431393a33393a32302e3434313734373933355a227d',3912631495);
INSERT INTO messages VALUES('marked',3,X'7b22726f6c65223a2275736572222c227061727473223a5b7b2274797065223a2274657874222c2274657874223a227468726565227d5d2c2274696d65223a22323032362d31322d30365431393a33393a32302e3434313734373933355a227d',1353736186);
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
CREATE TABLE marks (
	conversation TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
	start        INTEGER NOT NULL, -- Mark.From, above 0 (no row: no mark)
	facts        BLOB NOT NULL, -- Mark.Facts as given
	row_crc      INTEGER NOT NULL, -- messages.crc of the conversation's own message numbered start when it was set, noRow where that is its base's
	crc          INTEGER NOT NULL -- markChecksum of conversation, start, row_crc and facts
) WITHOUT ROWID;
INSERT INTO marks VALUES('marked',2,X'746865206661637473206b657074',3912631495,3572138312);
CREATE INDEX conversations_parent ON conversations(parent) WHERE parent != '';
CREATE INDEX conversations_base ON conversations(base) WHERE base != '';
CREATE INDEX conversations_branch_of ON conversations(branch_of) WHERE branch_of != '';
PRAGMA user_version = 7;
