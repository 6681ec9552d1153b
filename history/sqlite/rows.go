package sqlite

// This file is how a read of a conversation takes its rows: stepped on
// the store's connection (the driver's own, readRows), counted, checked
// against their checksums and decoded by decoders on the other cores
// (rowDecoder).

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
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
		d.add(storedRow{seq: seq, message: d.copyRow(raw), crc: crc.Int64})
		d.last, d.lastCRC = seq, crc.Int64
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
		vals, err := named([]any{tag.n, after, id})
		if err != nil {
			return err
		}
		rows, err := st.readTagged.(sqldriver.StmtQueryContext).QueryContext(ctx, vals)
		if err != nil {
			return err
		}
		defer rows.Close()
		got, err = s.stepDriverRows(ctx, rows, id, after, d, tag)
		return err
	})
	return got, err
}

// stepDriverRows steps rows of selectNewTagged, the driver's, as
// readRows reads them, until ctx ends: the driver watches ctx only while
// the statement starts (database/sql closed its rows when ctx ended), so
// ctx is looked at once a batch of rows.
func (s *Store) stepDriverRows(ctx context.Context, rows sqldriver.Rows, id string, after int, d *rowDecoder, tag *readTag) (got stepped, err error) {
	dest := make([]sqldriver.Value, 8)
	for seq := after; ; {
		if got.rows%rowBatch == rowBatch-1 {
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
		d.add(storedRow{seq: seq, message: raw, crc: crc})
		d.last, d.lastCRC = seq, crc
	}
}

// storedRow is one message as read, before decoding.
type storedRow struct {
	seq     int
	message []byte
	crc     int64 // as stored
}

// decodeRow checks a stored message against its checksum, then decodes it
// into dec's buffers (ahead: the bytes of rows still to decode, r's
// among them, history.Decoder.Message).
func (s *Store) decodeRow(id string, r storedRow, dec *history.Decoder, ahead int) (history.Message, error) {
	if sum := record.MessageChecksum(id, r.seq, r.message); sum != r.crc {
		return history.Message{}, fmt.Errorf("history store %s: conversation %s, message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", s.path, id, r.seq, r.crc, sum, history.ErrDamaged)
	}
	m, err := dec.Message(r.message, ahead)
	if err != nil {
		return m, fmt.Errorf("history store %s: conversation %s, message %d is not valid: %w", s.path, id, r.seq, err)
	}
	return m, nil
}

// rowDecoder decodes the rows Messages steps through, in batches, by
// decoders on the other cores: on a cold read of a long conversation
// decoding takes about twice as long as stepping. The decoders start with
// the first full batch; a read of fewer rows — the round or two since the
// last read — is decoded on the caller's goroutine, without them.
type rowDecoder struct {
	s    *Store
	id   string
	size int // the conversation's messages, for the first batch's room

	last    int   // the number of the last row read, 0 before the first
	lastCRC int64 // its checksum as stored

	batch []storedRow
	// rows holds the bytes of the rows read, copied (sql.RawBytes is
	// the driver's until the next row), many to an allocation: what is
	// decoded of them is kept elsewhere (history.Decoder), and they are
	// let go once decoded
	rows []byte
	dec  history.Decoder // the caller's, before the decoders start
	jobs chan *decodeJob // nil until the first full batch
	wg   sync.WaitGroup
	done []*decodeJob // in row order
}

// rowBytes is how many bytes of rows one allocation of rowDecoder.rows
// holds; a larger row is copied on its own.
const rowBytes = 64 << 10

// copyRow is raw copied, to be decoded after the next row is read.
func (d *rowDecoder) copyRow(raw []byte) []byte {
	if len(raw) > rowBytes/4 {
		return append([]byte(nil), raw...)
	}
	if cap(d.rows)-len(d.rows) < len(raw) {
		// doubling from 1 KiB: a read of the round or two since the
		// last allocates little
		d.rows = make([]byte, 0, min(rowBytes, max(2*cap(d.rows), 1<<10, len(raw))))
	}
	start := len(d.rows)
	d.rows = append(d.rows, raw...)
	return d.rows[start:len(d.rows):len(d.rows)]
}

// decodeJob is one batch of rows and what decoding them gave.
type decodeJob struct {
	rows []storedRow
	out  []history.Message
	err  error
}

// rowBatch is how many rows one decodeJob holds.
const rowBatch = 256

// add takes the next row in order.
func (d *rowDecoder) add(r storedRow) {
	if d.batch == nil {
		d.batch = make([]storedRow, 0, min(rowBatch, max(d.size-r.seq+1, 4)))
	}
	if d.batch = append(d.batch, r); len(d.batch) == rowBatch {
		d.start()
		d.send()
	}
}

// start starts the decoders, once.
func (d *rowDecoder) start() {
	if d.jobs != nil {
		return
	}
	d.jobs = make(chan *decodeJob, 8)
	for range max(1, runtime.GOMAXPROCS(0)) {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			var dec history.Decoder // this decoder's own buffers
			for j := range d.jobs {
				d.decode(j, &dec)
			}
		}()
	}
}

// send hands the batch to the decoders, or decodes it here before they
// are started.
func (d *rowDecoder) send() {
	j := &decodeJob{rows: d.batch}
	d.done = append(d.done, j)
	d.batch = nil
	if d.jobs == nil {
		d.decode(j, &d.dec)
		return
	}
	d.jobs <- j
}

// decode decodes j's rows into dec's buffers, stopping at the first that
// is not valid.
func (d *rowDecoder) decode(j *decodeJob, dec *history.Decoder) {
	j.out = make([]history.Message, 0, len(j.rows))
	ahead := 0 // the bytes of this job's rows still to decode
	for _, r := range j.rows {
		ahead += len(r.message)
	}
	for _, r := range j.rows {
		m, err := d.s.decodeRow(d.id, r, dec, ahead)
		if err != nil {
			j.err = err
			return
		}
		ahead -= len(r.message)
		j.out = append(j.out, m)
	}
}

// finish decodes what is left, waits for the decoders and appends the
// messages to dst in row order, or returns the first row's error.
func (d *rowDecoder) finish(dst []history.Message) ([]history.Message, error) {
	if len(d.batch) > 0 {
		d.send()
	}
	if d.jobs != nil {
		close(d.jobs)
		d.wg.Wait()
	}
	for _, j := range d.done {
		if j.err != nil {
			return nil, j.err
		}
		dst = append(dst, j.out...)
	}
	return dst, nil
}
