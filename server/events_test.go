package server

import (
	"strings"
	"testing"
)

func TestTheEventLogKeepsTheNewestAndSaysHowManyWereLost(t *testing.T) {
	l := newEventLog(8)
	for i := range 20 {
		if _, err := l.append("e", i); err != nil {
			t.Fatal(err)
		}
	}
	if l.lastSeq() != 20 || len(l.events) > 8 {
		t.Fatalf("last %d, %d kept", l.lastSeq(), len(l.events))
	}
	for _, tc := range []struct {
		after          int64
		first, n, gone int64
		restarted      bool
	}{
		{after: 0, first: l.first, n: 21 - l.first, gone: l.first - 1},
		{after: 18, first: 19, n: 2, gone: 0},
		{after: 20, first: 0, n: 0, gone: 0},
		// an id of an earlier server process: every event kept
		{after: 25, first: l.first, n: 21 - l.first, gone: l.first - 1, restarted: true},
	} {
		evs, _, gone, restarted, _ := l.since(tc.after)
		if int64(len(evs)) != tc.n || gone != tc.gone || restarted != tc.restarted || (len(evs) > 0 && evs[0].Seq != tc.first) {
			t.Errorf("since(%d): %d events from %v, %d gone, restarted %v; want %d from %d, %d gone, restarted %v", tc.after, len(evs), evs, gone, restarted, tc.n, tc.first, tc.gone, tc.restarted)
		}
	}
}

func TestTheEventLogIsBoundedByItsBytes(t *testing.T) {
	l := newEventLog(0)
	big := strings.Repeat("x", 1<<20)
	for range 100 {
		if _, err := l.append("model.delta", big); err != nil {
			t.Fatal(err)
		}
	}
	if l.bytes > eventBytesKept || l.bytes != sizeOf(l.events) || l.lastSeq() != 100 || len(l.events) == 0 {
		t.Fatalf("%d bytes in %d events kept (counted %d), last %d", l.bytes, len(l.events), sizeOf(l.events), l.lastSeq())
	}
}
