package agent

import (
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/window"
)

// continuing is continuingOf the whole of stored, for the tests that
// give a list.
func continuing(stored []history.Message, maxRounds int) (TurnResult, bool) {
	st := wholeState(stored)
	return continuingOf(&st, maxRounds)
}

// lastCached is lastCachedOf the whole of msgs, for the tests that give
// a list.
func lastCached(msgs []history.Message, ttl string, now time.Time) (history.Usage, bool) {
	t := window.Whole(msgs)
	return lastCachedOf(&t, ttl, now)
}
