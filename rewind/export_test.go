package rewind

import "time"

// SetLease sets the lease of the claims Hold takes, until the returned
// function puts it back.
func SetLease(d time.Duration) (undo func()) {
	old := lease
	lease = d
	return func() { lease = old }
}
