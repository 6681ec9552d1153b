package anthropic

import (
	"runtime"
	"sync"

	"github.com/myelin-run/myelin/history"
)

// A long conversation's messages are encoded on every core: each group's
// bytes depend on nothing but its own messages, so the groups are cut in
// parts of about the same size (group.at), each part is encoded by its own
// goroutine straight into the body's buffer, at the place its size hint
// gives it, and the parts are then moved together, in order. The body is
// the same, byte for byte, as one goroutine's (TestASpreadBodyIsOneEncodersBody
// holds the two to it). A part that outgrows its place (a text of many
// escapes, past sizeHint's slack) is encoded where append puts it, and then
// the parts are copied into a buffer of their own.

// spreadPart is the least size hint of messages given a goroutine of its
// own: below it, starting one costs more than it saves.
const spreadPart = 1 << 20

// spread appends the groups' messages to e.buf, each after a comma but for
// the first when comma is false, and returns where the comma before group
// keep was written (the end of the part of the body the next request may
// reuse), or -1 when keep is the first group without a comma before it.
// size is the messages' size hint (groupsOf's), which e.buf has room for.
// It encodes on as many goroutines as there are cores, up to one a
// spreadPart of messages.
func (e *encoder) spread(msgs []history.Message, groups []group, comma bool, keep, size int) (cut int) {
	parts := min(runtime.GOMAXPROCS(0), size/spreadPart, len(groups))
	start := len(e.buf)
	if parts <= 1 || cap(e.buf)-start < size+len(groups) {
		return e.groups(msgs, groups, 0, len(groups), comma, keep)
	}
	// first[j] is the first group of part j: the first whose hint starts
	// at or past j parts of the whole; part j is encoded at place[j], the
	// hint of the groups before it (and a comma each) past start, with
	// no more room than up to the next part's place
	first := make([]int, parts+1)
	place := make([]int, parts+1)
	for j, i := 1, 0; j < parts; j++ {
		for i < len(groups) && groups[i].at-groups[0].at < size*j/parts {
			i++
		}
		at := size // past the last group: an empty part, at the end
		if i < len(groups) {
			at = groups[i].at - groups[0].at
		}
		first[j], place[j] = i, start+at+i
	}
	first[parts], place[0], place[parts] = len(groups), start, start+size+len(groups)
	full := e.buf[:cap(e.buf)]
	encs := make([]encoder, parts)
	cuts := make([]int, parts)
	var wg sync.WaitGroup
	for j := range parts {
		encs[j] = encoder{buf: full[place[j]:place[j]:place[j+1]], mark: e.mark}
		if j == 0 {
			encs[0].buf = full[:start:place[1]] // after what is already written
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cuts[j] = encs[j].groups(msgs, groups, first[j], first[j+1], comma, keep)
		}()
	}
	cuts[0] = encs[0].groups(msgs, groups, 0, first[1], comma, keep)
	wg.Wait()
	// The parts together, in order: each moved down to where the one
	// before it ended, within full — unless a part outgrew its place
	// (append moved it): moving the one before it could then overwrite
	// the next before it moved, so they are copied to a buffer of their
	// own, with the room full had after the messages.
	out := full[:len(encs[0].buf)]
	written := 0
	for j := range parts {
		at := place[j]
		if j == 0 {
			at = 0 // the first part's buffer begins with what was there
		}
		if len(encs[j].buf) > 0 && &encs[j].buf[0] != &full[at] {
			out = nil
		}
		written += len(encs[j].buf)
	}
	if out == nil {
		out = make([]byte, 0, written+cap(full)-place[parts])
		out = append(out, encs[0].buf...)
	}
	cut = cuts[0]
	for j := 1; j < parts; j++ {
		if cuts[j] >= 0 {
			cut = len(out) + cuts[j]
		}
		out = append(out, encs[j].buf...) // in full: a move down (memmove)
	}
	e.buf = out
	return cut
}

// groups appends groups[lo:hi] of msgs to e.buf, as spread says, and
// returns where the comma before group keep was written, if it is among
// them, or -1, relative to e.buf's start.
func (e *encoder) groups(msgs []history.Message, groups []group, lo, hi int, comma bool, keep int) (cut int) {
	cut = -1
	for i := lo; i < hi; i++ {
		g := &groups[i]
		if i == keep && (comma || i > 0) {
			cut = len(e.buf)
		}
		if i > 0 || comma {
			e.raw(",")
		}
		e.message(g.role, msgs[g.start:g.end], g.mark)
	}
	return cut
}
