package providertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/myelin-run/myelin/provider"
)

// CheckAttemptsAfter fails t unless notices and err are what a wire's
// send tells and returns when it made retries+1 attempts, all failing to
// connect, after before attempts of the same request made by earlier
// sends (provider.WithAttemptsBefore): each retry's notice numbering its
// attempt after them (before+2, before+3, …) within a bound numbered the
// same way (before+retries+1), and err a *provider.ConnectionError
// counting every attempt. It is for wires whose retries are bounded by a
// count.
func CheckAttemptsAfter(t testing.TB, before, retries int, notices []provider.RetryNotice, err error) {
	t.Helper()
	var got, want []string
	for _, n := range notices {
		got = append(got, fmt.Sprintf("%d of %d", n.Attempt, n.Attempts))
	}
	for i := range retries {
		want = append(want, fmt.Sprintf("%d of %d", before+i+2, before+retries+1))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the retries were told as attempts %v, want %v", got, want)
	}
	var ce *provider.ConnectionError
	if !errors.As(err, &ce) || ce.Attempts != before+retries+1 {
		t.Errorf("want a *provider.ConnectionError of %d attempts, got %T: %v", before+retries+1, err, err)
	}
}
