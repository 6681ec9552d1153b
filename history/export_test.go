package history

import "time"

// SetClock makes a Memory time its claims by now, for the conformance
// suite (package history_test), which moves time without sleeping.
func SetClock(s *Memory, now func() time.Time) { s.now = now }
