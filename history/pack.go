package history

// This file is a packed copy of stored messages (AppendPacked, Unpack):
// what a reader keeps beside a conversation's mark so that a resume reads
// one blob instead of stepping and decoding a row per message (issue 34).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
)

// packVersion is the first byte of what AppendPacked writes. Any change of
// the layout below, or of the fields it packs, takes a new version: Unpack
// refuses every other one (ErrPackVersion).
const packVersion = 1

// ErrPackVersion is wrapped by Unpack's error for bytes packed by another
// version of the codec (another build of myelin): they are not read, and
// the caller reads the messages from the store instead.
var ErrPackVersion = errors.New("the messages were packed by another version of myelin")

// The layout, version 1. Integers are uvarints (counts, lengths) or
// varints (ints a message holds, which encoding/json lets be negative);
// a string is its length and its bytes. Nil and empty stay apart: Parts,
// Images, Files, Input and Raw by a flag of their message or part, an
// image's Data and an Edit's Cleared by a length (or count) + 1, 0 for
// nil; pointers by a flag.
//
//	version byte
//	messages+1, 0 for a nil list; parts in all; usages in all
//	each message: flags byte (msg*), role byte (code*), time, then
//	  as its flags say: parts (count, each part), usage, edit, settings
//	each part: flags, 2 bytes little-endian (part*), type byte (kind*),
//	  then the fields its flags name, in Part's order
//	time: varint Unix seconds; uvarint nanoseconds<<1 | 1 when it is
//	  not UTC, and then a varint offset in seconds east of UTC
const (
	msgParts    = 1 << iota // Parts is not nil
	msgUsage                // Usage is not nil
	msgCut                  // Cut
	msgEdit                 // Edit is not nil
	msgSettings             // Settings is not nil
	msgKnown    = 1<<iota - 1
)

const (
	partText = 1 << iota
	partCallID
	partName
	partInput // Input is not nil
	partIsError
	partImages // Images is not nil
	partSpillPath
	partWire
	partRaw // Raw is not nil
	partSignature
	partPermission // Permission is not nil
	partFiles      // Files is not nil
	partKnown      = 1<<iota - 1
)

// The roles and part types a byte stands for; 0 is any other, its string
// following.
const (
	codeOther = iota
	codeEmpty
	codeUser
	codeAssistant
	codeContext
)

const (
	kindOther = iota
	kindEmpty
	kindText
	kindToolCall
	kindToolResult
	kindReasoning
)

// AppendPacked appends msgs, packed, to dst and returns the extended
// buffer: a copy of messages as a store read them that Unpack gives back
// whole, for a reader that keeps it (the agent, with its mark's facts) to
// unpack at its next start instead of reading and decoding the stored
// rows one by one. For messages as a store reads them (DecodeMessage, a
// Store's Messages), Unpack's are reflect.DeepEqual to msgs: nil and empty
// slices, Input and Raw stay apart, every Time keeps its instant and its
// Location. Other messages come back as near as that allows: a Time's
// monotonic reading is dropped, and it comes back in UTC when it was in
// UTC, else in the Location DecodeMessage gives a stored time of its
// offset (Local when Local has that offset at that instant, else an
// unnamed fixed zone) — so a time at offset 0 that was not in UTC (a
// clock reading under TZ=UTC) comes back as "+00:00" reads, not "Z" as
// EncodeMessage writes it. The stores set every Time in UTC.
//
// It is not a storage format for a store's messages (EncodeMessage is),
// and it is not stable across versions of myelin: Unpack refuses bytes of
// another version with an error wrapping ErrPackVersion. It holds no
// checksum: whoever keeps the bytes must check them (a Store keeps Mark
// Facts checksummed).
//
// dst must not hold the bytes msgs were unpacked from (Unpack): their
// strings are those bytes, which the append would write over while it
// reads them. Pack a conversation read from a packed copy into a new
// buffer.
func AppendPacked(dst []byte, msgs []Message) []byte {
	// the counts Unpack allocates by, from the messages alone: a pass
	// over their parts too (to size dst) cost more than the appends'
	// growing does
	parts, usages := 0, 0
	for i := range msgs {
		parts += len(msgs[i].Parts)
		if msgs[i].Usage != nil {
			usages++
		}
	}
	size := 16 + 32*len(msgs) + 96*parts
	dst = slices.Grow(dst, size)
	dst = append(dst, packVersion)
	if msgs == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(msgs))+1)
	}
	dst = binary.AppendUvarint(dst, uint64(parts))
	dst = binary.AppendUvarint(dst, uint64(usages))
	for i := range msgs {
		dst = appendMessage(dst, &msgs[i])
	}
	return dst
}

func appendMessage(b []byte, m *Message) []byte {
	var flags byte
	if m.Parts != nil {
		flags |= msgParts
	}
	if m.Usage != nil {
		flags |= msgUsage
	}
	if m.Cut {
		flags |= msgCut
	}
	if m.Edit != nil {
		flags |= msgEdit
	}
	if m.Settings != nil {
		flags |= msgSettings
	}
	b = append(b, flags)
	switch m.Role {
	case "":
		b = append(b, codeEmpty)
	case User:
		b = append(b, codeUser)
	case Assistant:
		b = append(b, codeAssistant)
	case Context:
		b = append(b, codeContext)
	default:
		b = appendString(append(b, codeOther), string(m.Role))
	}
	b = appendTime(b, m.Time)
	if m.Parts != nil {
		b = binary.AppendUvarint(b, uint64(len(m.Parts)))
		for j := range m.Parts {
			b = appendPart(b, &m.Parts[j])
		}
	}
	if m.Usage != nil {
		b = appendUsage(b, m.Usage)
	}
	if m.Edit != nil {
		b = appendEdit(b, m.Edit)
	}
	if s := m.Settings; s != nil {
		b = appendString(b, s.Model)
		b = appendString(b, s.System)
		b = appendString(b, s.Tools)
		b = appendString(b, s.Cache)
		b = appendString(b, s.CacheTTL)
	}
	return b
}

func appendPart(b []byte, p *Part) []byte {
	var flags uint16
	set := func(bit uint16, on bool) {
		if on {
			flags |= bit
		}
	}
	set(partText, p.Text != "")
	set(partCallID, p.CallID != "")
	set(partName, p.Name != "")
	set(partInput, p.Input != nil)
	set(partIsError, p.IsError)
	set(partImages, p.Images != nil)
	set(partSpillPath, p.SpillPath != "")
	set(partWire, p.Wire != "")
	set(partRaw, p.Raw != nil)
	set(partSignature, p.Signature != "")
	set(partPermission, p.Permission != nil)
	set(partFiles, p.Files != nil)
	b = binary.LittleEndian.AppendUint16(b, flags)
	switch p.Type {
	case "":
		b = append(b, kindEmpty)
	case TextPart:
		b = append(b, kindText)
	case ToolCallPart:
		b = append(b, kindToolCall)
	case ToolResultPart:
		b = append(b, kindToolResult)
	case ReasoningPart:
		b = append(b, kindReasoning)
	default:
		b = appendString(append(b, kindOther), string(p.Type))
	}
	if flags&partText != 0 {
		b = appendString(b, p.Text)
	}
	if flags&partCallID != 0 {
		b = appendString(b, p.CallID)
	}
	if flags&partName != 0 {
		b = appendString(b, p.Name)
	}
	if flags&partInput != 0 {
		b = appendString(b, string(p.Input))
	}
	if flags&partImages != 0 {
		b = binary.AppendUvarint(b, uint64(len(p.Images)))
		for _, img := range p.Images {
			b = appendString(b, img.MIMEType)
			b = appendBytes(b, img.Data)
		}
	}
	if flags&partSpillPath != 0 {
		b = appendString(b, p.SpillPath)
	}
	if flags&partWire != 0 {
		b = appendString(b, p.Wire)
	}
	if flags&partRaw != 0 {
		b = appendString(b, string(p.Raw))
	}
	if flags&partSignature != 0 {
		b = appendString(b, p.Signature)
	}
	if r := p.Permission; r != nil {
		b = appendString(b, r.Decision)
		b = appendString(b, r.By)
		b = appendString(b, r.Rule)
		b = appendString(b, r.Answer)
		b = appendString(b, r.Reason)
		b = appendTime(b, r.At)
	}
	if p.Files != nil {
		b = binary.AppendUvarint(b, uint64(len(p.Files)))
		for _, f := range p.Files {
			b = appendString(b, f.Path)
			b = appendBool(b, f.Created)
			b = appendString(b, f.Before)
			b = appendString(b, f.After)
		}
	}
	return b
}

func appendEdit(b []byte, e *Edit) []byte {
	if e.Cleared == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(e.Cleared))+1)
	}
	for _, c := range e.Cleared {
		b = binary.AppendVarint(b, int64(c.Msg))
		b = appendString(b, c.CallID)
		b = appendBool(b, c.Input)
		b = appendString(b, c.Text)
		b = appendString(b, c.Path)
		b = binary.AppendVarint(b, int64(c.Chars))
		b = binary.AppendVarint(b, int64(c.Images))
	}
	b = appendBool(b, e.Summary != nil)
	if s := e.Summary; s != nil {
		b = binary.AppendVarint(b, int64(s.Through))
		b = appendString(b, s.Text)
		b = appendUsagePointer(b, s.Usage)
	}
	b = appendString(b, e.Why)
	b = appendBool(b, e.Refusal != nil)
	if r := e.Refusal; r != nil {
		b = appendString(b, r.Stop)
		b = appendString(b, r.Text)
		b = appendUsagePointer(b, r.Usage)
	}
	b = binary.AppendVarint(b, int64(e.Before))
	return binary.AppendVarint(b, int64(e.After))
}

func appendUsagePointer(b []byte, u *Usage) []byte {
	b = appendBool(b, u != nil)
	if u != nil {
		b = appendUsage(b, u)
	}
	return b
}

func appendUsage(b []byte, u *Usage) []byte {
	b = binary.AppendVarint(b, int64(u.Input))
	b = binary.AppendVarint(b, int64(u.Output))
	b = binary.AppendVarint(b, int64(u.CacheRead))
	b = binary.AppendVarint(b, int64(u.CacheWrite))
	return binary.AppendVarint(b, int64(u.CacheWrite1h))
}

// appendTime packs t's instant and whether it is UTC, with its offset when
// it is not (see Unpack for the Location it comes back with).
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	ns := uint64(t.Nanosecond()) << 1
	if t.Location() == time.UTC {
		return binary.AppendUvarint(b, ns)
	}
	_, off := t.Zone()
	return binary.AppendVarint(binary.AppendUvarint(b, ns|1), int64(off))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendBytes packs v so that nil and empty stay apart.
func appendBytes(b []byte, v []byte) []byte {
	if v == nil {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(v))+1), v...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

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
// Bytes of another version of the codec are refused with an error
// wrapping ErrPackVersion. Bytes cut short, with something after them, or
// otherwise not what AppendPacked writes are refused with an error saying
// what and where, as far as the layout can tell: a changed byte of a
// string's content is not noticed (the store's checksum of the bytes is
// what notices it).
//
// A Time comes back with the instant packed and, when it was not UTC, the
// Location DecodeMessage gives its RFC 3339 offset in this process: Local
// when Local has that offset at that instant, else an unnamed fixed zone.
// So a copy packed under another TZ unpacks as the store's rows would read.
func Unpack(data []byte) ([]Message, error) {
	if len(data) == 0 {
		return nil, errors.New("history: unpacking packed messages: no bytes")
	}
	if data[0] != packVersion {
		return nil, fmt.Errorf("history: unpacking packed messages: version %d, this build reads %d: %w", data[0], packVersion, ErrPackVersion)
	}
	u := unpacker{b: data, i: 1}
	count, parts, usages := u.uvarint(), u.uvarint(), u.uvarint()
	// each message takes at least 4 bytes (flags, role, time), each part 3
	left := uint64(len(data) - u.i)
	switch {
	case u.bad:
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
	}
	if u.bad {
		return nil, u.err()
	}
	if count == 0 {
		return nil, nil
	}
	u.parts = make([]Part, parts)
	u.usages = make([]Usage, usages)
	msgs := make([]Message, count-1)
	for i := range msgs {
		u.message(&msgs[i])
		if u.bad {
			return nil, u.err()
		}
	}
	switch {
	case len(u.parts) != 0:
		u.fail(fmt.Sprintf("%d parts fewer than counted", len(u.parts)))
	case len(u.usages) != 0:
		u.fail(fmt.Sprintf("%d usages fewer than counted", len(u.usages)))
	case u.i != len(data):
		u.fail("bytes after the last message")
	}
	if u.bad {
		return nil, u.err()
	}
	return msgs, nil
}

// unpacker reads what AppendPacked wrote. Its first failure is kept (what,
// at); every read after it gives zeros, as the position is at the end.
type unpacker struct {
	b      []byte
	i      int
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
	return fmt.Errorf("history: unpacking %d bytes of packed messages: %s at byte %d", len(u.b), u.what, u.at)
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
