package script

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"
	"unsafe"
)

// The messages between myelin and the engine process that runs a script
// (child.go). Each is an op byte, a flag, four integers and three strings:
// fixed framing, so that a 16 MiB tool result crosses as its bytes, not
// re-encoded.
const (
	// from myelin to the engine
	opRun    = 'r' // N: memory, stack, time (ms), output; S: code, tool names (JSON), "background" or ""
	opSettle = 's' // N0: ticket; Flag: isError; S: text, structured content

	// from the engine to myelin
	opReady  = 'y' // once, first: the engine's process has started and waits for a script
	opTaken  = 't' // first for each script: the engine has read it and runs it now
	opPrint  = 'p' // S0: text
	opCall   = 'c' // N0: ticket; S: name, input
	opWait   = 'w' // N0: the calls the engine waits for; it sends nothing more until one settles
	opFinish = 'f' // N: line, the text's full length in bytes; S: kind, text (cut at the output limit)
	opEnd    = 'e' // S: how it ended (an end* constant), error message; N0: line; N1: the process's resident memory in bytes (0: unknown)
)

// How the engine's run ended, in an opEnd message.
const (
	endDone      = "done"      // the script's promise settled (an opFinish came first)
	endError     = "error"     // the engine failed: a syntax error, an uncaught engine error
	endUnsettled = "unsettled" // nothing left to run and no tool call in flight
	endUnread    = "unread"    // the script ended, but its value or error could not be read
	endNoMemory  = "no memory" // nothing left to run, and the engine is out of memory
)

// maxField bounds one string of a message: far above any output limit,
// and a guard against reading garbage as a length.
const maxField = 1 << 30

// msg is one message either way.
type msg struct {
	Op   byte
	Flag bool
	N    [4]int64
	S    [3]string
}

// writeMsg writes m, and flushes w when it is a *bufio.Writer.
func writeMsg(w io.Writer, m msg) error {
	if err := putMsg(w, m); err != nil {
		return err
	}
	if f, ok := w.(*bufio.Writer); ok {
		return f.Flush()
	}
	return nil
}

// headLen is the length of a message's fixed part: op, flag, four
// integers and the three strings' lengths.
const headLen = 2 + 4*8 + 3*4

// putMsg writes m without flushing it. Into a *bufio.Writer (every
// writer but tests'), its head is made in the writer's buffer: no
// allocation a message.
func putMsg(w io.Writer, m msg) error {
	var head []byte
	if bw, ok := w.(*bufio.Writer); ok && bw.Size() >= headLen {
		if bw.Available() < headLen {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		head = bw.AvailableBuffer()[:headLen]
	} else {
		head = make([]byte, headLen)
	}
	putHead(head, m)
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, s := range m.S {
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
	}
	return nil
}

// putHead fills head (headLen bytes) with m's fixed part.
func putHead(head []byte, m msg) {
	head[0], head[1] = m.Op, 0 // a writer's buffer holds what was there before
	if m.Flag {
		head[1] = 1
	}
	for i, n := range m.N {
		binary.LittleEndian.PutUint64(head[2+8*i:], uint64(n))
	}
	for i, s := range m.S {
		binary.LittleEndian.PutUint32(head[2+32+4*i:], uint32(len(s)))
	}
}

func readMsg(r io.Reader) (msg, error) {
	var m msg
	var head [headLen]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return m, err
	}
	m.Op, m.Flag = head[0], head[1] == 1
	for i := range m.N {
		m.N[i] = int64(binary.LittleEndian.Uint64(head[2+8*i:]))
	}
	for i := range m.S {
		n := binary.LittleEndian.Uint32(head[2+32+4*i:])
		if n > maxField {
			return m, fmt.Errorf("a message field of %d bytes (op %q): the stream is corrupt", n, m.Op)
		}
		if n == 0 {
			continue
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return m, err
		}
		// b is read once and never written again: the string is its
		// bytes, not a copy (a 16 MiB result was copied twice).
		m.S[i] = unsafe.String(unsafe.SliceData(b), len(b))
	}
	return m, nil
}

// waitingFor reports whether the next message r holds already read is
// an opWait, and for how many calls, without reading it.
func waitingFor(r io.Reader) (calls int64, ok bool) {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Buffered() < headLen {
		return 0, false
	}
	head, err := br.Peek(headLen)
	if err != nil || head[0] != opWait {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(head[2:])), true
}

// flushDelay bounds how long an engine keeps a message it buffered
// while its script runs on (outbox). A variable for tests.
var flushDelay = time.Millisecond

// outbox is the engine's side of the pipe to myelin. What a script sends
// while it runs (its calls, its prints) is buffered and written at once
// when the engine waits for a result (wait), so that the calls a script
// starts together cross in one write, and a call it awaits crosses with
// the opWait that tells myelin the engine waits for it alone. A message
// kept while the script runs on is written within flushDelay.
type outbox struct {
	mu    sync.Mutex
	w     *bufio.Writer
	timer *time.Timer
	armed bool // the timer runs: something is buffered
	err   error
}

func newOutbox(w io.Writer) *outbox {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	o := &outbox{w: bw}
	o.timer = time.AfterFunc(time.Hour, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.flushLocked()
	})
	o.timer.Stop()
	return o
}

// put buffers m, written within flushDelay at the latest.
func (o *outbox) put(m msg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = putMsg(o.w, m)
	}
	if !o.armed && o.w.Buffered() > 0 {
		o.armed = true
		o.timer.Reset(flushDelay)
	}
	return o.err
}

// send writes m now, with what was buffered before it.
func (o *outbox) send(m msg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = putMsg(o.w, m)
	}
	return o.flushLocked()
}

// wait writes what was buffered, and m after it; nothing when nothing
// was.
func (o *outbox) wait(m msg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w.Buffered() == 0 {
		return o.err
	}
	if o.err == nil {
		o.err = putMsg(o.w, m)
	}
	return o.flushLocked()
}

func (o *outbox) flushLocked() error {
	if o.err == nil {
		o.err = o.w.Flush()
	}
	if o.armed {
		o.armed = false
		o.timer.Stop()
	}
	return o.err
}

// stop ends the timer: nothing is written after it but by send.
func (o *outbox) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.armed = false
	o.timer.Stop()
}
