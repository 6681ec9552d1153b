package window

import "github.com/myelin-run/myelin/history"

// The whole-list forms of readers over a Tail, for the tests that give a
// list.

// boundary is boundaryIn of the whole of stored.
func boundary(stored []history.Message, i int) bool {
	t := Whole(stored)
	return boundaryIn(&t, i)
}

// viewTo is View of the messages before place end, with the edits of every
// record in stored applied (also those at or after end).
func viewTo(stored []history.Message, end int) []history.Message {
	t := Whole(stored)
	return viewWith(&t, gather(stored), end)
}

// size is the bytes and images of what View(stored[:end]) sends, without
// building it, with the edits of the records before end applied.
func size(stored []history.Message, end int) (bytes, images int) {
	t := Whole(stored)
	return t.size(end)
}
