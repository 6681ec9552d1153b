package agent

import (
	"fmt"
	"strings"
	"testing"
)

// want is one condition a test checks and what it is, in words that
// finish "want ...": "the user's message", "its first part an error".
type want struct {
	ok bool
	is string
}

// must fails the test now when any of wants does not hold, naming each
// that does not and then subject (what was checked, as it is). The
// conditions are evaluated before it is called: a condition that could
// not be (an index past a slice's end) goes in a check of its own first.
func must(t *testing.T, subject string, wants ...want) {
	t.Helper()
	var failed []string
	for _, w := range wants {
		if !w.ok {
			failed = append(failed, "want "+w.is)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%s; got %s", strings.Join(failed, "; "), subject)
	}
}

// wantTurn fails the test now when tr did not end as wanted: its Reason,
// Text and Rounds, each that differs named. Usage and Dropped are not
// compared.
func wantTurn(t *testing.T, tr, wanted TurnResult) {
	t.Helper()
	must(t, fmt.Sprintf("turn %+v", tr),
		want{tr.Reason == wanted.Reason, fmt.Sprintf("reason %q", wanted.Reason)},
		want{tr.Text == wanted.Text, fmt.Sprintf("text %q", wanted.Text)},
		want{tr.Rounds == wanted.Rounds, fmt.Sprintf("%d rounds", wanted.Rounds)})
}
