package sqlite

// This file is how a read of a conversation takes its rows: stepped on
// the store's connection (the driver's own, readRows), counted, checked
// against their checksums and decoded by decoders on the other cores
// (rowDecoder, rowdecode.Batches).

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/rowdecode"
)

// stepRows steps through the rows of conversation id after its first
// known messages (selectRange's), handing each to d: found is false when
// not even the conversation's row came back (it is not in the store),
// missing the error of a gap in the numbers, err the driver's.
func (s *Store) stepRows(rows *sql.Rows, id string, known int, d *rowDecoder) (found bool, missing, err error) {
	for seq := known + 1; rows.Next(); seq++ {
		found = true
		var raw sql.RawBytes // valid until the next row: copied
		var stored, crc sql.NullInt64
		if err = rows.Scan(&stored, &raw, &crc); err != nil {
			return found, nil, err
		}
		if !stored.Valid {
			break // no messages after known
		}
		if stored.Int64 != int64(seq) {
			missing = fmt.Errorf("history store %s: conversation %s: message %d is missing (the next one stored is %d): %w", s.path, id, seq, stored.Int64, history.ErrDamaged)
			break
		}
		d.add(rowdecode.Row{Seq: seq, Message: d.Copy(raw), CRC: crc.Int64})
	}
	return found, missing, rows.Err()
}

// stepped is what readRows found besides the rows it handed on.
type stepped struct {
	found    bool  // the conversation's row came back: it is in the store
	appended int   // its count of messages appended (conversations.messages), read with the rows
	below    int   // its rows numbered at or below its base_at, where its own do not begin: 0 unless damaged
	rows     int   // its rows after those known, each counted, also after a gap
	missing  error // the first gap in the numbers, the rows after it not handed on
}

// readRows reads the rows of conversation id after its first after
// (selectNewTagged's), with its readTag at tag.n into tag, on the
// driver's connection: stepped there, without database/sql's locking and
// conversions per row (in a scratch benchmark ~0.85× the CPU of stepping
// through database/sql), and each row's message handed to d as the driver
// gives it, not copied again. That needs the driver to give each row's
// bytes in memory of their own: modernc's does (its columnBlob copies
// the blob SQLite holds only until the next step). A driver that reused
// that memory would overwrite a row's bytes after it is handed on. Most
// rows are checked against their checksums after later rows are stepped,
// so that would mostly show as damage, but not always (a batch's last
// row may be overwritten while it is decoded, after its check): the
// store relies on the driver's copy, and
// TestARowsBytesAreItsOwnAfterTheNextStep, which steps the rows through a
// reader reusing one buffer, fails if the driver stops making it.
func (s *Store) readRows(ctx context.Context, id string, after int, tag *readTag, d *rowDecoder) (got stepped, err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return got, err
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		st, err := s.rawPrepared(ctx, dc)
		if err != nil {
			return err
		}
		got, err = s.readTaggedOn(rawTx{ctx: ctx, st: st}, id, after, tag, d)
		return err
	})
	return got, err
}

// readTaggedOn is readRows on the connection tx runs on (in its
// transaction, when it has begun one: Marked's).
func (s *Store) readTaggedOn(tx rawTx, id string, after int, tag *readTag, d *rowDecoder) (stepped, error) {
	vals, err := named([]any{tag.n, after, id})
	if err != nil {
		return stepped{}, err
	}
	rows, err := tx.st.readTagged.(sqldriver.StmtQueryContext).QueryContext(tx.ctx, vals)
	if err != nil {
		return stepped{}, err
	}
	defer rows.Close()
	return s.stepDriverRows(tx.ctx, rows, id, after, d, tag)
}

// stepDriverRows steps rows of selectNewTagged, the driver's, as
// readRows reads them, until ctx ends: the driver watches ctx only while
// the statement starts (database/sql closed its rows when ctx ended), so
// ctx is looked at once a batch of rows.
func (s *Store) stepDriverRows(ctx context.Context, rows sqldriver.Rows, id string, after int, d *rowDecoder, tag *readTag) (got stepped, err error) {
	dest := make([]sqldriver.Value, 8)
	for seq := after; ; {
		if got.rows%rowdecode.Batch == rowdecode.Batch-1 {
			if err := ctx.Err(); err != nil {
				return got, err
			}
		}
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, err
		}
		if !got.found {
			if dest[0] != nil || dest[6] == nil {
				return got, nil // no row of the conversation's own first: not in the store
			}
			// the conversation's row
			got.found = true
			for i, dst := range []any{&tag.base, &tag.baseAt, &tag.crc, &got.appended, &got.below} {
				if err := assign(dst, dest[3+i]); err != nil {
					return got, fmt.Errorf("history store %s: conversation %s: its record's column %d: %w: %w", s.path, id, 4+i, err, history.ErrDamaged)
				}
			}
			continue
		}
		if dest[0] == nil {
			return got, errors.New("a second row of the conversation's own among its messages")
		}
		got.rows++
		if got.missing != nil {
			continue // counted only
		}
		seq++
		var stored, crc int64
		if err := errors.Join(assign(&stored, dest[0]), assign(&crc, dest[2])); err != nil {
			return got, fmt.Errorf("history store %s: conversation %s, message %d: %w: %w", s.path, id, seq, err, history.ErrDamaged)
		}
		if stored != int64(seq) {
			got.missing = fmt.Errorf("history store %s: conversation %s: message %d is missing (the next one stored is %d): %w", s.path, id, seq, stored, history.ErrDamaged)
			continue
		}
		var raw []byte
		switch v := dest[1].(type) {
		case []byte:
			raw = v // the driver's copy (readRows)
		case string:
			raw = []byte(v) // a message stored as text (the first layouts' rows)
		case nil:
		default:
			// a number written behind the store's back: damage, as any
			// bytes that no longer match their checksum
			return got, fmt.Errorf("history store %s: conversation %s, message %d is stored as %T, not bytes: %w", s.path, id, seq, v, history.ErrDamaged)
		}
		d.add(rowdecode.Row{Seq: seq, Message: raw, CRC: crc})
	}
}

// rowDecoder decodes the rows a read steps through, in batches, by
// decoders on the other cores (rowdecode.Batches), and keeps the number
// and checksum of the last row handed to it: the read's tag.
type rowDecoder struct {
	rowdecode.Batches
	last    int   // the number of the last row read, 0 before the first
	lastCRC int64 // its checksum as stored
}

// newRowDecoder is a rowDecoder of conversation id of s, expecting rows
// numbered up to size.
func newRowDecoder(s *Store, id string, size int) *rowDecoder {
	return &rowDecoder{Batches: rowdecode.Batches{Store: s.path, Conv: id, Last: size}}
}

// add takes the next row in order.
func (d *rowDecoder) add(r rowdecode.Row) {
	d.Add(r)
	d.last, d.lastCRC = r.Seq, r.CRC
}
