//go:build !linux

package hugepage

import (
	"errors"
	"fmt"
)

// advise does nothing where huge pages are not asked for by madvise.
func advise(p, n uintptr) {}

// advisedAt is an error: there is no advice to read.
func advisedAt(p uintptr) (bool, error) {
	return false, fmt.Errorf("hugepage: reading the advice of %#x: %w", p, errors.ErrUnsupported)
}
