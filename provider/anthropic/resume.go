package anthropic

import (
	"bytes"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// The messages' bytes of a body depend on the messages alone: not on the
// model, tools, system prompt, thinking or cache lifetime (all in the
// head, after the messages, and encoded for every body), nor on the
// platform (its form edits the head). So what identifies a kept prefix's
// encoding is this encoder, named by resumeEncoding (change it whenever
// encode.go's output changes), and the build of myelin that ran it.
const resumeEncoding = "anthropic messages/1"

// resumeWire is the ResumePoint.Wire of this wire's points.
func resumeWire() string { return resumeEncoding + "; " + provider.BuildIdentity() }

// HoldsPrefix reports whether p keeps a prefix for conversation key
// (provider.Resumable).
func (p *Provider) HoldsPrefix(key string) bool { return p.prefixes.Kept(key) != nil }

// KeptPrefix is what p kept of conversation key's last body, when it was
// made of msgs' first messages (provider.Resumable).
func (p *Provider) KeptPrefix(key string, msgs []history.Message) (history.ResumePoint, bool) {
	pre := p.prefixes.Get(key, "", msgs)
	if pre == nil || pre.Len() == 0 {
		return history.ResumePoint{}, false
	}
	return history.ResumePoint{Wire: resumeWire(), Messages: pre.Len(), Last: pre.Last(), Bytes: pre.Bytes()}, true
}

// ResumePrefix takes back pt as the kept prefix of conversation key, made
// of msgs (provider.Resumable): when p keeps nothing for key, pt is of
// this encoding and build, and pt's bytes are `{"messages":[`, then
// message groups, the last of them — checked here, encoded again — the
// encoding of msgs' last group, of role pt.Last.
func (p *Provider) ResumePrefix(key string, msgs []history.Message, pt history.ResumePoint) bool {
	if p.prefixes.Kept(key) != nil || pt.Wire != resumeWire() || pt.Messages != len(msgs) || len(msgs) == 0 {
		return false
	}
	if !endsWithLastGroup(pt.Bytes, msgs, pt.Last) {
		return false
	}
	p.prefixes.Put(key, "", nil, msgs, pt.Bytes, pt.Last) // the caller's no more (Resumable)
	// the bytes' memory, with the room the store gave them, is where the
	// next body is written, after them, as on a body given back
	p.prefixes.Release(key, pt.Bytes)
	return true
}

// endsWithLastGroup reports whether b, a kept prefix of msgs, starts as a
// body does and ends with the encoding of msgs' last message group, of
// role last (bodyWith keeps the groups before a marked one, so none of
// them is marked).
func endsWithLastGroup(b []byte, msgs []history.Message, last history.Role) bool {
	const open = `{"messages":[`
	if !bytes.HasPrefix(b, []byte(open)) {
		return false
	}
	// the last group: the sendable messages of role last at the end,
	// with the records and empty answers among them
	start, found := len(msgs), false
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.IsRecord() || blockCount(m) == 0 {
			continue
		}
		if m.Role != last {
			break
		}
		start, found = i, true
	}
	if !found {
		return false
	}
	e := encoder{}
	e.message(last, msgs[start:], false)
	before := len(b) - len(e.buf)
	if before < len(open) || !bytes.Equal(b[before:], e.buf) {
		return false
	}
	sentBefore := false
	for _, m := range msgs[:start] {
		if !m.IsRecord() && blockCount(m) > 0 {
			sentBefore = true
			break
		}
	}
	if sentBefore {
		return b[before-1] == ',' && before > len(open)
	}
	return before == len(open)
}
