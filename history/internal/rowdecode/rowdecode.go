// Package rowdecode checks a conversation's stored rows against their
// checksums and decodes them into history messages, in batches, by
// decoders on every core: on a cold read of a long conversation (a
// process just started, a worker taking a turn it has not read) decoding
// takes longer than fetching the rows, and the stores (history/sqlite,
// history/postgres) share this one way of doing it.
//
// It is plumbing under the stores, not API. It must not read a store
// itself, nor let a decoded message hold a row's bytes: what a message
// holds is in its history.Decoder's buffers, and the rows are the read's
// until it returns.
package rowdecode

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/internal/record"
)

// Row is one stored message as read, before it is checked and decoded.
type Row struct {
	Seq     int    // its number in the conversation, from 1
	Message []byte // its stored bytes (history.EncodeMessage's)
	CRC     int64  // its checksum as stored (record.MessageChecksum)
}

// Check checks r of conversation conv against its checksum, then decodes
// it into dec's buffers (ahead: the bytes of rows still to decode, r's
// among them, history.Decoder.Message). store names the store in errors.
func Check(store, conv string, r Row, dec *history.Decoder, ahead int) (history.Message, error) {
	if sum := record.MessageChecksum(conv, r.Seq, r.Message); sum != r.CRC {
		return history.Message{}, fmt.Errorf("history store %s: conversation %s, message %d is damaged: its bytes no longer match their checksum (stored %08x, now %08x): %w", store, conv, r.Seq, r.CRC, sum, history.ErrDamaged)
	}
	m, err := dec.Message(r.Message, ahead)
	if err != nil {
		return m, fmt.Errorf("history store %s: conversation %s, message %d is not valid: %w", store, conv, r.Seq, err)
	}
	return m, nil
}

// Batch is how many rows one batch holds: the decoders start with the
// first full one, and a read of fewer rows — the round or two since the
// last read — is decoded on the caller's goroutine, without them.
const Batch = 256

// rowBytes is how many bytes of rows one allocation of Batches.Copy
// holds; a larger row is copied on its own.
const rowBytes = 64 << 10

// Batches decodes the rows of one read of a conversation, handed to it in
// order (Add), and gives the messages in that order (Finish). Its zero
// value names no store or conversation in its errors; set them. It is for
// one goroutine (the reader's); the decoders it starts are its own and
// have ended when Finish returns.
type Batches struct {
	Store string // names the store in errors
	Conv  string // the conversation read
	// Last is the number of the last row the read expects (the
	// conversation's count), 0 when it is not known: the first batch is
	// sized to it, so a short read allocates little.
	Last int

	batch []Row
	rows  []byte          // the bytes Copy copied, many rows to an allocation
	dec   history.Decoder // the caller's, before the decoders start
	jobs  chan *job       // nil until the first full batch
	wg    sync.WaitGroup
	done  []*job // in row order
}

// job is one batch of rows and what decoding them gave.
type job struct {
	rows []Row
	out  []history.Message
	err  error
}

// Copy is raw copied, for a driver that gives a row's bytes only until its
// next row: many rows to an allocation, let go with the read.
func (b *Batches) Copy(raw []byte) []byte {
	if len(raw) > rowBytes/4 {
		return append([]byte(nil), raw...)
	}
	if cap(b.rows)-len(b.rows) < len(raw) {
		// doubling from 1 KiB: a read of the round or two since the
		// last allocates little
		b.rows = make([]byte, 0, min(rowBytes, max(2*cap(b.rows), 1<<10, len(raw))))
	}
	start := len(b.rows)
	b.rows = append(b.rows, raw...)
	return b.rows[start:len(b.rows):len(b.rows)]
}

// Add takes the next row in order. Its Message must stay as it is until
// Finish returns (Copy it when the driver reuses it). No row is added
// after Finish or Stop.
func (b *Batches) Add(r Row) {
	if b.batch == nil {
		b.batch = make([]Row, 0, min(Batch, max(b.Last-r.Seq+1, 4)))
	}
	if b.batch = append(b.batch, r); len(b.batch) == Batch {
		b.start()
		b.send()
	}
}

// start starts the decoders, once: one a core.
func (b *Batches) start() {
	if b.jobs != nil {
		return
	}
	b.jobs = make(chan *job, 8)
	for range max(1, runtime.GOMAXPROCS(0)) {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			var dec history.Decoder // this decoder's own buffers
			for j := range b.jobs {
				b.decode(j, &dec)
			}
		}()
	}
}

// send hands the batch to the decoders, or decodes it here before they
// are started.
func (b *Batches) send() {
	j := &job{rows: b.batch}
	b.done = append(b.done, j)
	b.batch = nil
	if b.jobs == nil {
		b.decode(j, &b.dec)
		return
	}
	b.jobs <- j
}

// decode decodes j's rows into dec's buffers, stopping at the first that
// is not valid.
func (b *Batches) decode(j *job, dec *history.Decoder) {
	j.out = make([]history.Message, 0, len(j.rows))
	ahead := 0 // the bytes of this job's rows still to decode
	for _, r := range j.rows {
		ahead += len(r.Message)
	}
	for _, r := range j.rows {
		m, err := Check(b.Store, b.Conv, r, dec, ahead)
		if err != nil {
			j.err = err
			return
		}
		ahead -= len(r.Message)
		j.out = append(j.out, m)
	}
}

// Finish decodes what is left, waits for the decoders and appends the
// messages to dst in row order, or returns the first row's error. It is
// called once, after the last Add.
func (b *Batches) Finish(dst []history.Message) ([]history.Message, error) {
	if len(b.batch) > 0 {
		b.send()
	}
	b.Stop()
	for _, j := range b.done {
		if j.err != nil {
			return nil, j.err
		}
		dst = append(dst, j.out...)
	}
	return dst, nil
}

// Stop ends the decoders, once they have decoded what they were handed;
// it does nothing when they are not running (never started, or ended by
// Finish or an earlier Stop). A read that gives up before Finish — it
// failed, or reads again — stops them, or they wait for rows for ever:
// defer it where the Batches is made.
func (b *Batches) Stop() {
	if b.jobs != nil {
		close(b.jobs)
		b.wg.Wait()
		b.jobs = nil
	}
}
