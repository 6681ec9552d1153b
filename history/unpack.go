package history

// This file reads what pack.go writes (Unpack), on more than one core
// when the pack is large.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/myelin-run/myelin/internal/hugepage"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// Unpack is the messages data holds: bytes AppendPacked wrote, and nothing
// after them. It is for a reader that kept a packed copy of a
// conversation's messages (AppendPacked) and reads it instead of the
// stored rows; it is not a reader of a store's rows (DecodeMessage is).
//
// The messages are not copied out of data: their strings, Input, Raw and
// image Data are data's bytes, so data must not be changed, or reused,
// while any of the messages is in use. Each message's Parts are a slice
// of one array with a capacity of their length (an append to them copies),
// and the Usages are one array too.
//
// A large pack is decoded on up to GOMAXPROCS goroutines (at most 4),
// each taking the pack's chunks one by one and filling their range of
// those three arrays (at a resume's start, first touching their pages:
// most of an unpack's time); all of them have ended when Unpack returns.
// The result, or the error, is the same as on one goroutine. When the
// arrays do not fit under the collector's heap goal, one P is left to
// the collector: their allocation starts a cycle, and decoding on every
// P starves it (see unpackers).
//
// Bytes of another version of the codec are refused with an error
// wrapping ErrPackVersion. Bytes cut short, with something after them, or
// otherwise not what AppendPacked writes — an index that does not lead to
// where each chunk starts among them — are refused with an error saying
// what and where (the first in the bytes' order), as far as the layout can
// tell: a changed byte of a string's content is not noticed (the store's
// checksum of the bytes is what notices it).
//
// A Time comes back with the instant packed and, when it was not UTC, the
// Location DecodeMessage gives its RFC 3339 offset in this process: Local
// when Local has that offset at that instant, else an unnamed fixed zone.
// So a copy packed under another TZ unpacks as the store's rows would read.
func Unpack(data []byte) ([]Message, error) {
	return UnpackWithRoom(data, 0)
}

// UnpackWithRoom is Unpack whose list of messages has room for room more
// (its capacity is its length and room), for a caller that appends to it
// the messages stored after the pack: a resume of 100k messages copied
// the whole list to do so (about 7 ms of a fresh process by a scratch
// build's time stamps; not measured apart). A negative room is none;
// a room that would take the list past what memory can hold is an
// error, and bounding it below that is the caller's, as make's capacity.
func UnpackWithRoom(data []byte, room int) ([]Message, error) {
	if room > maxRoom {
		return nil, fmt.Errorf("history: unpacking packed messages: room for %d more messages: more than a list can hold", room)
	}
	return unpackRoom(data, unpackers(runtime.GOMAXPROCS(0)), unpackSerialBelow, max(room, 0))
}

// maxRoom bounds UnpackWithRoom's room so that a list's capacity, the
// pack's messages (at most a quarter of its bytes) and the room, never
// overflows, on 32-bit builds too.
const maxRoom = math.MaxInt32 / 2

// unpackers is the goroutines an Unpack decodes on with procs Ps: all
// of them, at most maxUnpackers — one fewer when its arrays do not fit
// under the collector's heap goal (fitsUnderGoal, in unpackRoom). With a
// collector's cycle running over the unpacking, the Ps all decoding was
// measured slower than one in a fresh process with 2
// (BenchmarkUnpackFresh, 100k messages: 0.74–0.88×; a resume of 100k,
// 280–359 ms against 177–233 ms): the cycle the arrays' allocation
// starts has no idle P to mark on, and the decoding runs under its write
// barrier for longer. With no cycle, 1.55×; and a run or chat puts its
// first cycle past its first request (internal/startgc, first goal
// 256 MB), so there, on 2 Ps, both decode: a fresh resume of 100k took
// 127/146/121/170 ms against 142/151/140/159 ms before the index, which
// on one goroutine had measured level with it (docs/performance.md,
// "Unpacking on more than one core").
func unpackers(procs int) int {
	return min(procs, maxUnpackers)
}

// decoders is the goroutines of an unpack given workers whose three
// arrays take arrays bytes: one fewer when they do not fit under the
// heap goal — their allocation starts a cycle, and a P is left to it
// (unpackers).
func decoders(workers int, arrays uint64) int {
	if workers > 1 && !fitsUnderGoal(arrays) {
		return workers - 1
	}
	return workers
}

// fitsUnderGoal reports whether n more bytes of heap objects fit under
// the collector's current heap goal, so that allocating them starts no
// cycle: the live heap (HeapAlloc) and the goal (NextGC) of
// runtime.ReadMemStats, which stops the world for a few microseconds,
// once an unpack of thousands of messages. (Not runtime/metrics, whose
// package init, run at every start of every myelin process, builds its
// table of descriptions: ~0.5 ms and a dozen page faults; issue 34.)
var fitsUnderGoal = func(n uint64) bool {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc+n < m.NextGC
}

// maxUnpackers bounds the goroutines of an Unpack: a resume has little
// else to do meanwhile, but a process serving many has, and past a few
// the chunks of a 100k pack get too few to share out evenly. (Not
// measured past 2: the machine this was built on has 2 cores.)
const maxUnpackers = 4

// unpackSerialBelow is the messages and parts below which a pack is
// decoded on the caller's goroutine alone: what another would take of
// the work is not worth its start (BenchmarkUnpackFresh).
const unpackSerialBelow = 4096

// unpackRoom is Unpack on up to workers goroutines when data holds at
// least least messages and parts, its list of messages with room for room
// more.
func unpackRoom(data []byte, workers, least, room int) ([]Message, error) {
	if len(data) == 0 {
		return nil, errors.New("history: unpacking packed messages: no bytes")
	}
	if data[0] != packVersion {
		return nil, fmt.Errorf("history: unpacking packed messages: version %d, this build reads %d: %w", data[0], packVersion, ErrPackVersion)
	}
	u := unpacker{b: data, i: 1}
	count, parts, usages, chunk := u.uvarint(), u.uvarint(), u.uvarint(), u.uvarint()
	// each message takes at least 4 bytes (flags, role, time), each part 3
	left := uint64(len(data) - u.i)
	entries := uint64(0)
	if count > 1 && chunk > 0 {
		entries = (count - 2) / chunk
	}
	switch {
	case u.bad:
	case chunk == 0:
		u.fail("chunks of no messages")
	case count == 0:
		if parts != 0 || usages != 0 || left != 0 {
			u.fail("a nil list of messages with something in it")
		}
	case count-1 > left/4:
		u.fail("more messages than bytes")
	case parts > left/3:
		u.fail("more parts than bytes")
	case usages > count-1:
		u.fail("more usages than messages")
	case entries > left/indexEntry:
		u.fail("an index longer than the bytes left")
	case (count-1)*4+parts*3+entries*indexEntry > left:
		// each is at most its share of the bytes (above): no overflow;
		// together they bound what is allocated before a message is read
		u.fail("more messages, parts and index than bytes")
	}
	if u.bad {
		return nil, u.err()
	}
	if count == 0 {
		return nil, nil
	}
	n := int(count - 1)
	p := packed{data: data, n: n, chunk: int(min(chunk, uint64(max(n, 1)))), chunks: int(entries) + 1,
		index: data[u.i : u.i+int(entries)*indexEntry], first: u.i + int(entries)*indexEntry,
		parts: int(parts), usages: int(usages)}
	if at, what := p.checkIndex(); what != "" {
		u.i = at
		u.fail(what)
		return nil, u.err()
	}
	if p.chunks == 1 || n+p.parts < least {
		workers = 1 // too small to share out: decoded here, and nothing asked of the collector
	}
	workers = decoders(workers, uint64(n)*uint64(unsafe.Sizeof(Message{}))+parts*uint64(unsafe.Sizeof(Part{}))+usages*uint64(unsafe.Sizeof(Usage{})))
	// the parts first, as before the index: with the messages first, a
	// fresh process's unpack of 100k messages took ~1.7k more page faults
	// and ~12 ms more CPU (the collector's cycle these allocations start
	// begins at another one; GOGC=off, no difference)
	// in huge pages when the process asked for them (internal/hugepage: a
	// run's start, where first touching these arrays page by page was
	// most of an unpack's time)
	p.partsOf, p.usagesOf = hugepage.Make[Part](int(parts), int(parts)), hugepage.Make[Usage](int(usages), int(usages))
	p.msgs = hugepage.Make[Message](n, n+room)
	var err error
	if workers > 1 {
		err = p.decodeOn(min(workers, p.chunks))
	} else {
		var w unpacker
		for c := range p.chunks {
			if !p.decode(&w, c) {
				err = w.err()
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return p.msgs, nil
}

// packed is a pack being unpacked: its counts and index, checked
// (checkIndex), and the arrays its chunks are decoded into.
type packed struct {
	data             []byte
	n, chunk, chunks int    // messages, messages a chunk, chunks
	index            []byte // the entries of the chunks after the first
	first            int    // the byte the first message starts at
	parts, usages    int
	msgs             []Message
	partsOf          []Part
	usagesOf         []Usage
}

// bounds is where chunk c starts: its first byte, and the parts and
// usages of the messages before it. For c == chunks, the end of all.
func (p *packed) bounds(c int) (at, parts, usages int) {
	switch c {
	case 0:
		return p.first, 0, 0
	case p.chunks:
		return len(p.data), p.parts, p.usages
	}
	e := p.index[(c-1)*indexEntry:]
	// checkIndex saw each fit an int
	return int(binary.LittleEndian.Uint64(e)), int(binary.LittleEndian.Uint64(e[8:])), int(binary.LittleEndian.Uint64(e[16:]))
}

// checkIndex is the byte and what is wrong with the first entry of the
// index that is out of order or out of range ("" when none is), so that
// every chunk's bytes, parts and usages are slices that can be taken.
// Whether each one is where its chunk starts is seen by decoding the
// chunk before it (decode).
func (p *packed) checkIndex() (int, string) {
	at, parts, usages := uint64(p.first), uint64(0), uint64(0)
	for c := 1; c < p.chunks; c++ {
		e := p.index[(c-1)*indexEntry:]
		a, q, s := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:]), binary.LittleEndian.Uint64(e[16:])
		place := p.first - len(p.index) + (c-1)*indexEntry
		switch {
		case a < at || a > uint64(len(p.data)):
			return place, fmt.Sprintf("chunk %d said to start at byte %d, not between %d and %d", c, a, at, len(p.data))
		case q < parts || q > uint64(p.parts):
			return place + 8, fmt.Sprintf("chunk %d said to start after %d parts, not between %d and %d", c, q, parts, p.parts)
		case s < usages || s > uint64(p.usages) || s > uint64(c*p.chunk):
			return place + 16, fmt.Sprintf("chunk %d said to start after %d usages, not between %d and %d", c, s, usages, min(p.usages, c*p.chunk))
		}
		at, parts, usages = a, q, s
	}
	return 0, ""
}

// decode decodes chunk c into its range of p's arrays with w, and reports
// whether it did; else w holds the error. A chunk must end where the next
// one starts, having filled its parts and usages exactly: so every chunk
// starts where the one before it ended, and the messages are those one
// reading from the first would give.
func (p *packed) decode(w *unpacker, c int) bool {
	at, parts, usages := p.bounds(c)
	end, partsEnd, usagesEnd := p.bounds(c + 1)
	w.b, w.i, w.size, w.bad = p.data[:end], at, len(p.data), false
	w.parts, w.usages = p.partsOf[parts:partsEnd], p.usagesOf[usages:usagesEnd]
	msgs := p.msgs[c*p.chunk : min((c+1)*p.chunk, p.n)]
	for i := range msgs {
		w.message(&msgs[i])
		if w.bad {
			return false
		}
	}
	switch {
	case len(w.parts) != 0:
		w.fail(fmt.Sprintf("%d parts fewer than counted", len(w.parts)))
	case len(w.usages) != 0:
		w.fail(fmt.Sprintf("%d usages fewer than counted", len(w.usages)))
	case w.i != end && c+1 == p.chunks:
		w.fail("bytes after the last message")
	case w.i != end:
		w.fail(fmt.Sprintf("chunk %d ending %d bytes before byte %d, where chunk %d is said to start", c, end-w.i, end, c+1))
	}
	return !w.bad
}

// decodeOn decodes p's chunks on workers goroutines, this one among them,
// each taking the next chunk not taken until none is left or one failed,
// and returns the error of the first chunk that failed. The chunks before
// a failed one were all taken (they are taken in order) and are decoded
// to their end, so the error is the one a single goroutine would give.
func (p *packed) decodeOn(workers int) error {
	s := &unpacking{packed: *p}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(s.work)
	}
	s.work()
	wg.Wait()
	return s.err
}

// unpacking is a packed decoded on several goroutines.
type unpacking struct {
	packed
	next   atomic.Int64 // the next chunk to take
	stop   atomic.Bool  // a chunk failed: take no more
	mu     sync.Mutex
	err    error // the error of the first chunk that failed (failed)
	failed int
}

func (s *unpacking) work() {
	var w unpacker
	for !s.stop.Load() {
		c := int(s.next.Add(1) - 1)
		if c >= s.chunks {
			return
		}
		if !s.decode(&w, c) {
			s.mu.Lock()
			if s.err == nil || c < s.failed {
				s.err, s.failed = w.err(), c
			}
			s.mu.Unlock()
			s.stop.Store(true)
			return
		}
	}
}

// unpacker reads what AppendPacked wrote. Its first failure is kept (what,
// at); every read after it gives zeros, as the position is at the end.
type unpacker struct {
	b      []byte // the bytes it may read: to the end of its chunk
	i      int
	size   int // the pack's bytes
	bad    bool
	what   string
	at     int
	parts  []Part  // the parts not yet given to a message
	usages []Usage // the usages not yet given to a message
	loc    *time.Location
	locOff int
}

func (u *unpacker) fail(what string) {
	if !u.bad {
		u.bad, u.what, u.at = true, what, u.i
	}
	u.i = len(u.b)
}

func (u *unpacker) err() error {
	size := u.size
	if size == 0 {
		size = len(u.b)
	}
	return fmt.Errorf("history: unpacking %d bytes of packed messages: %s at byte %d", size, u.what, u.at)
}

func (u *unpacker) byte() byte {
	if u.i >= len(u.b) {
		u.fail("cut short")
		return 0
	}
	c := u.b[u.i]
	u.i++
	return c
}

func (u *unpacker) uvarint() uint64 {
	if i := u.i; i < len(u.b) { // one byte, the usual: inlined
		if c := u.b[i]; c < 0x80 {
			u.i = i + 1
			return uint64(c)
		}
	}
	return u.longUvarint()
}

func (u *unpacker) longUvarint() uint64 {
	v, n := binary.Uvarint(u.b[u.i:])
	if n <= 0 {
		u.fail("a number cut short or too long")
		return 0
	}
	u.i += n
	return v
}

func (u *unpacker) varint() int64 {
	v := u.uvarint()
	return int64(v>>1) ^ -int64(v&1)
}

// int is a varint that must fit an int.
func (u *unpacker) int() int {
	v := u.varint()
	if int64(int(v)) != v {
		u.fail("a number too large")
		return 0
	}
	return int(v)
}

// count is a count of things each at least least bytes long.
func (u *unpacker) count(least int) int {
	n := u.uvarint()
	if n > uint64((len(u.b)-u.i)/least) {
		u.fail("a count larger than the bytes left")
		return 0
	}
	return int(n)
}

func (u *unpacker) bool() bool {
	switch u.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	u.i--
	u.fail("a flag neither 0 nor 1")
	return false
}

// raw is the next n bytes, clipped; not nil (empty when n is 0) unless
// they are not there.
func (u *unpacker) raw(n uint64) []byte {
	if n > uint64(len(u.b)-u.i) {
		u.fail("a string longer than the bytes left")
		return nil
	}
	v := u.b[u.i : u.i+int(n) : u.i+int(n)]
	u.i += int(n)
	return v
}

func (u *unpacker) string() string {
	v := u.raw(u.uvarint())
	if len(v) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(v), len(v))
}

// bytes is appendBytes' value: nil, or data's bytes (empty ones not nil).
func (u *unpacker) bytes() []byte {
	n := u.uvarint()
	if n == 0 {
		return nil
	}
	return u.raw(n - 1)
}

func (u *unpacker) message(m *Message) {
	flags := u.byte()
	if flags&^msgKnown != 0 {
		u.i--
		u.fail(fmt.Sprintf("message flags %#x", flags))
		return
	}
	switch c := u.byte(); c {
	case codeEmpty:
	case codeUser:
		m.Role = User
	case codeAssistant:
		m.Role = Assistant
	case codeContext:
		m.Role = Context
	case codeOther:
		m.Role = Role(u.string())
	default:
		u.i--
		u.fail(fmt.Sprintf("role %d", c))
		return
	}
	m.Time = u.time()
	m.Cut = flags&msgCut != 0
	if flags&msgParts != 0 {
		n := u.uvarint()
		if n > uint64(len(u.parts)) {
			u.fail("more parts than counted")
			return
		}
		m.Parts = u.parts[:n:n]
		u.parts = u.parts[n:]
		for j := range m.Parts {
			u.part(&m.Parts[j])
		}
	}
	if flags&msgUsage != 0 {
		if len(u.usages) == 0 {
			u.fail("more usages than counted")
			return
		}
		m.Usage = &u.usages[0]
		u.usages = u.usages[1:]
		u.usage(m.Usage)
	}
	if flags&msgEdit != 0 {
		m.Edit = u.edit()
	}
	if flags&msgSettings != 0 {
		m.Settings = &Settings{Model: u.string(), System: u.string(), Tools: u.string(), Cache: u.string(), CacheTTL: u.string()}
	}
}

func (u *unpacker) part(p *Part) {
	if len(u.b)-u.i < 3 {
		u.fail("a part cut short")
		return
	}
	flags := binary.LittleEndian.Uint16(u.b[u.i:])
	if flags&^partKnown != 0 {
		u.fail(fmt.Sprintf("part flags %#x", flags))
		return
	}
	u.i += 2
	switch k := u.byte(); k {
	case kindEmpty:
	case kindText:
		p.Type = TextPart
	case kindToolCall:
		p.Type = ToolCallPart
	case kindToolResult:
		p.Type = ToolResultPart
	case kindReasoning:
		p.Type = ReasoningPart
	case kindOther:
		p.Type = PartType(u.string())
	default:
		u.i--
		u.fail(fmt.Sprintf("part type %d", k))
		return
	}
	if flags&partText != 0 {
		p.Text = u.string()
	}
	if flags&partCallID != 0 {
		p.CallID = u.string()
	}
	if flags&partName != 0 {
		p.Name = u.string()
	}
	if flags&partInput != 0 {
		p.Input = u.raw(u.uvarint()) // empty, not nil, when it was
	}
	p.IsError = flags&partIsError != 0
	if flags&partImages != 0 {
		p.Images = make([]result.Image, u.count(2))
		for k := range p.Images {
			p.Images[k] = result.Image{MIMEType: u.string(), Data: u.bytes()}
		}
	}
	if flags&partSpillPath != 0 {
		p.SpillPath = u.string()
	}
	if flags&partWire != 0 {
		p.Wire = u.string()
	}
	if flags&partRaw != 0 {
		p.Raw = u.raw(u.uvarint())
	}
	if flags&partSignature != 0 {
		p.Signature = u.string()
	}
	if flags&partPermission != 0 {
		p.Permission = &permission.Record{Decision: u.string(), By: u.string(), Rule: u.string(), Answer: u.string(), Reason: u.string(), At: u.time()}
	}
	if flags&partFiles != 0 {
		p.Files = make([]FileChange, u.count(4))
		for k := range p.Files {
			p.Files[k] = FileChange{Path: u.string(), Created: u.bool(), Before: u.string(), After: u.string()}
		}
	}
}

func (u *unpacker) usage(v *Usage) {
	*v = Usage{Input: u.int(), Output: u.int(), CacheRead: u.int(), CacheWrite: u.int(), CacheWrite1h: u.int()}
}

func (u *unpacker) usagePointer() *Usage {
	if !u.bool() {
		return nil
	}
	v := &Usage{}
	u.usage(v)
	return v
}

func (u *unpacker) edit() *Edit {
	e := &Edit{}
	if n := u.uvarint(); n > 0 {
		if n-1 > uint64((len(u.b)-u.i)/7) {
			u.fail("a count larger than the bytes left")
			return e
		}
		e.Cleared = make([]Cleared, n-1)
	}
	for k := range e.Cleared {
		e.Cleared[k] = Cleared{Msg: u.int(), CallID: u.string(), Input: u.bool(), Text: u.string(), Path: u.string(), Chars: u.int(), Images: u.int()}
	}
	if u.bool() {
		e.Summary = &Summary{Through: u.int(), Text: u.string(), Usage: u.usagePointer()}
	}
	e.Why = u.string()
	if u.bool() {
		e.Refusal = &Refusal{Stop: u.string(), Text: u.string(), Usage: u.usagePointer()}
	}
	e.Before, e.After = u.int(), u.int()
	return e
}

// time reads appendTime's: the instant, in UTC or else in the Location
// time.Parse gives an RFC 3339 time of that offset (Local when Local has
// that offset at that instant, else an unnamed fixed zone), which is what
// DecodeMessage gives.
func (u *unpacker) time() time.Time {
	sec := u.varint()
	ns := u.uvarint()
	if ns>>1 >= 1e9 {
		u.fail("nanoseconds past a second")
		return time.Time{}
	}
	t := time.Unix(sec, int64(ns>>1)) // in Local
	if ns&1 == 0 {
		return t.UTC()
	}
	off := u.int()
	if _, local := t.Zone(); local == off {
		return t.In(time.Local) // as time.Parse sets it: time.UTC as Local is nil
	}
	if u.loc == nil || u.locOff != off {
		u.loc, u.locOff = time.FixedZone("", off), off
	}
	return t.In(u.loc)
}
