package agent

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
// wire's prefix in the store (history.Resumes) as a resume point; the
// first turn after a restart gives it back to the wire (provider.Resumable)
// once it has checked it against the conversation as stored:
//
//   - the point was made from the first Rows stored messages: the store
//     must hold at least as many;
//   - its bytes encode the first Messages messages of the view of those
//     rows (window.View): the SHA-256 of those messages (their roles and
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

// resumePrefix gives the wire, when it keeps nothing for conversation
// id's requests (key: their CacheKey), the resume point the store keeps
// for id, if it holds for stored (the conversation as read at the turn's
// start). It reports whether the wire took it; a point that does not hold
// is left (the body is encoded whole), and so is a point the store cannot
// read.
func (a *Agent) resumePrefix(ctx context.Context, id, key string, stored []history.Message) bool {
	w, s, ok := a.resumer()
	if !ok || w.HoldsPrefix(key) {
		return false
	}
	pt, err := s.ResumeOf(ctx, id)
	if err != nil {
		return false
	}
	msgs, ok := resumable(pt, stored)
	if !ok || !w.ResumePrefix(key, msgs, pt) {
		return false
	}
	a.resumes.mark(id, resumeMark{pt.Wire, pt.Messages, pt.Digest})
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

// digestOf is the SHA-256, in hex, of msgs' roles and parts: every field
// of a part a wire encodes (those prefix.SameParts compares), each
// prefixed by its length so that no two messages give the same bytes.
func digestOf(msgs []history.Message) string {
	h := sha256.New()
	var buf []byte
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
		buf = buf[:0]
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
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

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
