package agent

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"sync"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/window"
)

// Resuming a stored conversation: a running agent's wire keeps the encoded
// start of each conversation's last body (a wire's kept prefix,
// internal/prefix) and encodes only the last few message groups of the
// next one. A restarted agent's wire keeps nothing, so its first request
// encoded every message again — at 100,000 messages the better part of
// the first request's build. At the end of each turn the agent keeps the
// wire's prefix in the store (history.Resumes) as a resume point; a turn
// whose wire keeps nothing for the conversation (the first after a
// restart) gives it back to the wire (provider.Resumable) once it has
// checked it against the conversation as stored:
//
//   - the point was made from the first Rows stored messages: the store
//     must hold at least as many;
//   - its bytes encode the first Messages messages of the view of those
//     rows (window.View): the digest of those messages (their roles and
//     parts, digestOf) must be the point's Digest — a rewind, a switch of
//     branch, or a message changed by another writer gives another;
//   - the wire takes back only a point of its own encoding and build,
//     whose bytes end with its encoding of those messages' last group.
//
// A point that fails any check is left alone and the body is encoded
// whole, as before: the point is a cache, and the body built on it is
// byte for byte the one a running agent would have sent (the wire checks
// each kept message against the request's, as it does for its own
// prefixes). Docs: docs/agent.md, "Resuming a conversation".

// resumeKept is what an agent remembers of the points it kept or took
// back, per conversation, so that a turn that added nothing to the kept
// prefix does not write the same point again.
type resumeKept struct {
	mu sync.Mutex
	m  map[string]resumeMark
}

// resumeMark names a point: its wire, its size in messages, and digest.
type resumeMark struct {
	wire     string
	messages int
	digest   string
}

// maxResumeMarks bounds the conversations an agent remembers a point of.
const maxResumeMarks = 256

func (r *resumeKept) same(id string, m resumeMark) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id] == m
}

func (r *resumeKept) mark(id string, m resumeMark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxResumeMarks {
		r.m = map[string]resumeMark{}
	}
	r.m[id] = m
}

// resumer is the wire and the store of a's resume points, when both
// have them.
func (a *Agent) resumer() (provider.Resumable, history.Resumes, bool) {
	w, ok := a.Provider.(provider.Resumable)
	if !ok {
		return nil, nil, false
	}
	s, ok := a.Store.(history.Resumes)
	return w, s, ok
}

// pendingResume is a resume point being read from the store while the
// turn reads the conversation (prefetchResume): the two reads overlap.
type pendingResume struct {
	id, key string
	done    chan struct{}
	pt      history.ResumePoint
	err     error
}

// prefetchResume starts reading conversation id's resume point when the
// wire and the store have resume points and the wire keeps nothing for
// the conversation's requests (a new process, or a conversation the
// wire dropped); nil otherwise.
func (a *Agent) prefetchResume(ctx context.Context, id string) *pendingResume {
	w, s, ok := a.resumer()
	if !ok {
		return nil
	}
	conv, err := a.record(ctx, id)
	if err != nil {
		return nil
	}
	key, err := a.cacheKey(ctx, conv)
	if err != nil || w.HoldsPrefix(key) {
		return nil
	}
	p := &pendingResume{id: id, key: key, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.pt, p.err = s.ResumeOf(ctx, id)
	}()
	return p
}

// resumePrefix gives the wire the resume point p read, if it holds for
// stored (the conversation as read at the turn's start) and the wire
// still keeps nothing for the conversation. It reports whether the wire
// took it; a point that does not hold is left (the body is encoded
// whole), and so is a point the store could not read.
func (a *Agent) resumePrefix(p *pendingResume, stored []history.Message) bool {
	if p == nil {
		return false
	}
	<-p.done
	w, _, ok := a.resumer()
	if !ok || p.err != nil {
		return false
	}
	msgs, ok := resumable(p.pt, stored)
	if !ok || !w.ResumePrefix(p.key, msgs, p.pt) {
		return false
	}
	a.resumes.mark(p.id, resumeMark{p.pt.Wire, p.pt.Messages, p.pt.Digest})
	return true
}

// resumable is the view messages pt's bytes encode, when pt holds for
// stored: stored has the rows pt was made from, and the first
// pt.Messages messages of their view digest to pt.Digest.
func resumable(pt history.ResumePoint, stored []history.Message) ([]history.Message, bool) {
	if pt.Rows < 0 || pt.Rows > len(stored) || pt.Messages <= 0 {
		return nil, false
	}
	view := window.View(stored[:pt.Rows])
	if pt.Messages > len(view) {
		return nil, false
	}
	msgs := view[:pt.Messages:pt.Messages]
	if digestOf(msgs) != pt.Digest {
		return nil, false
	}
	return msgs, true
}

// keepResume keeps, at the end of a turn of conversation id, what the
// wire kept of its last request's body — msgs, the view of the first rows
// stored messages — as the conversation's resume point, unless it is the
// point kept or taken back last. A failure to keep it costs only the next
// restart's speed.
func (a *Agent) keepResume(ctx context.Context, id, key string, rows int, msgs []history.Message) {
	w, s, ok := a.resumer()
	if !ok || len(msgs) == 0 {
		return
	}
	pt, ok := w.KeptPrefix(key, msgs)
	if !ok || pt.Messages > len(msgs) {
		return
	}
	pt.Rows, pt.Digest = rows, digestOf(msgs[:pt.Messages])
	mark := resumeMark{pt.Wire, pt.Messages, pt.Digest}
	if a.resumes.same(id, mark) {
		return
	}
	if err := s.KeepResume(history.Lazy(context.WithoutCancel(ctx)), id, pt); err != nil {
		return
	}
	a.resumes.mark(id, mark)
}

// digestOf is a digest, in hex, of msgs' roles and parts: every field of
// a part a wire encodes (those prefix.SameParts compares), each prefixed
// by its length so that no two messages give the same bytes. It is the
// CRC-32C and the CRC-32 (IEEE) of those bytes: 64 bits that any change
// — a rewind, a switch, another writer's edit — alters but with a chance
// of 2^-64. It guards against the conversation having changed, not
// against a forged point (who can write the store can write the messages
// too). Both CRCs run on the CPU's own instructions, several times faster
// than SHA-256 (BenchmarkResumeDigest).
func digestOf(msgs []history.Message) string {
	var c, ieee uint32
	buf := make([]byte, 0, 80<<10)
	flush := func() {
		c = crc32.Update(c, castagnoli, buf)
		ieee = crc32.Update(ieee, crc32.IEEETable, buf)
		buf = buf[:0]
	}
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	raw := func(b []byte) {
		if b == nil {
			buf = append(buf, 0)
			return
		}
		buf = binary.AppendUvarint(buf, uint64(len(b))+1)
		buf = append(buf, b...)
	}
	for i := range msgs {
		m := &msgs[i]
		if len(buf) >= 64<<10 { // in large updates, not one a message
			flush()
		}
		str(string(m.Role))
		buf = binary.AppendUvarint(buf, uint64(len(m.Parts)))
		for j := range m.Parts {
			p := &m.Parts[j]
			str(string(p.Type))
			str(p.Text)
			str(p.CallID)
			str(p.Name)
			raw(p.Input)
			if p.IsError {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
			str(p.SpillPath)
			str(p.Wire)
			raw(p.Raw)
			str(p.Signature)
			buf = binary.AppendUvarint(buf, uint64(len(p.Images)))
			for _, img := range p.Images {
				str(img.MIMEType)
				raw(img.Data)
			}
		}
	}
	flush()
	var sum [8]byte
	binary.BigEndian.PutUint32(sum[:4], c)
	binary.BigEndian.PutUint32(sum[4:], ieee)
	return "crc32c+crc32:" + hex.EncodeToString(sum[:])
}

// castagnoli is the CRC-32C table (crc32.Castagnoli).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lastRequest is a turn's last request: the view of the first rows
// stored messages.
type lastRequest struct {
	rows int
	msgs []history.Message
}

// keepResume keeps the resume point of the turn's last request.
func (t *turning) keepResume() {
	if t.last.msgs != nil {
		t.a.keepResume(t.kept, t.id, t.sz.key, t.last.rows, t.last.msgs)
	}
}
