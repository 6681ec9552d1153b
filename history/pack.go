package history

// This file is a packed copy of stored messages (AppendPacked, Unpack):
// what a reader keeps beside a conversation's mark so that a resume reads
// one blob instead of stepping and decoding a row per message (issue 34).

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"
)

// packVersion is the first byte of what AppendPacked writes. Any change of
// the layout below, or of the fields it packs, takes a new version: Unpack
// refuses every other one (ErrPackVersion).
const packVersion = 2

// ErrPackVersion is wrapped by Unpack's error for bytes packed by another
// version of the codec (another build of myelin): they are not read, and
// the caller reads the messages from the store instead.
var ErrPackVersion = errors.New("the messages were packed by another version of myelin")

// The layout, version 2. Integers are uvarints (counts, lengths) or
// varints (ints a message holds, which encoding/json lets be negative);
// a string is its length and its bytes. Nil and empty stay apart: Parts,
// Images, Files, Input and Raw by a flag of their message or part, an
// image's Data and an Edit's Cleared by a length (or count) + 1, 0 for
// nil; pointers by a flag.
//
//	version byte
//	messages+1, 0 for a nil list; parts in all; usages in all
//	chunk: messages in each chunk (at least 1); the messages are cut
//	  into chunks of that many, the last one shorter
//	the index: for every chunk but the first, 24 bytes: three
//	  little-endian uint64s, the byte its first message starts at
//	  (counted from the version byte) and the parts and usages of the
//	  messages before it
//	each message: flags byte (msg*), role byte (code*), time, then
//	  as its flags say: parts (count, each part), usage, edit, settings
//	each part: flags, 2 bytes little-endian (part*), type byte (kind*),
//	  then the fields its flags name, in Part's order
//	time: varint Unix seconds; uvarint nanoseconds<<1 | 1 when it is
//	  not UTC, and then a varint offset in seconds east of UTC
//
// The index is what lets Unpack decode chunks on several cores, each into
// its own range of the messages, parts and usages; it is checked as it is
// read (every chunk must end where the next one starts, with the parts
// and usages the next one says are before it), on one core or several
// alike. Version 1 was the same without chunk and index.
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
	return appendPacked(dst, msgs, packChunk)
}

// packChunk is the messages in a chunk of what AppendPacked writes: the
// unit of work Unpack's goroutines take one by one. Smaller chunks share
// a pack out more evenly (10k messages: 20 chunks) for 24 bytes of index
// each (4.7 KB at 100k, 0.04% of its pack); BenchmarkUnpackFresh could
// not tell 256, 512 and 1024 apart on this loaded machine.
const packChunk = 512

// appendPacked is AppendPacked with chunks of chunk messages.
func appendPacked(dst []byte, msgs []Message, chunk int) []byte {
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
	start := len(dst)
	dst = append(dst, packVersion)
	if msgs == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(msgs))+1)
	}
	dst = binary.AppendUvarint(dst, uint64(parts))
	dst = binary.AppendUvarint(dst, uint64(usages))
	dst = binary.AppendUvarint(dst, uint64(chunk))
	index := len(dst)
	dst = append(dst, make([]byte, indexEntry*chunksOf(len(msgs), chunk)-indexEntry)...)
	parts, usages = 0, 0
	for i := range msgs {
		if i > 0 && i%chunk == 0 {
			e := dst[index+indexEntry*(i/chunk-1):]
			binary.LittleEndian.PutUint64(e, uint64(len(dst)-start))
			binary.LittleEndian.PutUint64(e[8:], uint64(parts))
			binary.LittleEndian.PutUint64(e[16:], uint64(usages))
		}
		m := &msgs[i]
		parts += len(m.Parts)
		if m.Usage != nil {
			usages++
		}
		dst = appendMessage(dst, m)
	}
	return dst
}

// indexEntry is the bytes of a chunk's entry in the index.
const indexEntry = 24

// chunksOf is how many chunks of chunk messages n messages make: at least
// one (the first, which has no entry in the index), even when n is 0.
func chunksOf(n, chunk int) int {
	if n == 0 {
		return 1
	}
	return (n-1)/chunk + 1
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
