package postgres

import (
	"context"
	"math/rand/v2"
	"time"
)

// This file is how the store's transactions meet the database's refusals
// that a second try answers: a deadlock (40P01), which the server breaks
// by ending one of the transactions in it, and a serialization failure
// (40001). Either rolls the transaction back whole, so trying it again
// from its start is safe: every write reads what it needs (the row lock,
// the claim, where the conversation ends) inside it.
//
// Most writes take one conversation's row lock and cannot be in a
// deadlock; a Rewind, Switch or Delete locks its conversation and then
// others (the branch, the records it points elsewhere), and a Fork one
// record and then its parent's key, so two of them on conversations that
// share messages may each wait for the other.

// maxTries is how many times a transaction the database ended as a
// deadlock's or a serialization failure's victim is tried in all.
const maxTries = 5

// retrying runs try, and again (after a short, growing, random pause)
// while it fails with a deadlock or a serialization failure, up to
// maxTries times in all or until ctx is done: its error is the last try's.
func retrying(ctx context.Context, try func() error) error {
	for n := 1; ; n++ {
		err := try()
		if err == nil || n == maxTries || !(isCode(err, "40P01") || isCode(err, "40001")) {
			return err
		}
		pause := time.Duration(n)*5*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
