package script

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
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

func writeMsg(w io.Writer, m msg) error {
	var head [2 + 4*8 + 3*4]byte
	head[0] = m.Op
	if m.Flag {
		head[1] = 1
	}
	for i, n := range m.N {
		binary.LittleEndian.PutUint64(head[2+8*i:], uint64(n))
	}
	for i, s := range m.S {
		binary.LittleEndian.PutUint32(head[2+32+4*i:], uint32(len(s)))
	}
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	for _, s := range m.S {
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
	}
	if f, ok := w.(*bufio.Writer); ok {
		return f.Flush()
	}
	return nil
}

func readMsg(r io.Reader) (msg, error) {
	var m msg
	var head [2 + 4*8 + 3*4]byte
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
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return m, err
		}
		m.S[i] = string(b)
	}
	return m, nil
}
