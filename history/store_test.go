package history_test

import (
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/storetest"
)

// The conformance suite (history/storetest) on this package's stores.

func TestMemoryKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Subject{Open: func(t *testing.T, now func() time.Time) func() history.Store {
		s := &history.Memory{}
		history.SetClock(s, now)
		return func() history.Store { return s }
	}})
}
