package ratelimittest

import (
	"testing"

	"github.com/myelin-run/myelin/ratelimit"
)

func TestMemoryKeepsTheSharedContract(t *testing.T) {
	m := &Memory{}
	RunShared(t, func(*testing.T) ratelimit.Shared { return m })
}
