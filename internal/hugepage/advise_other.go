//go:build !linux

package hugepage

import (
	"errors"
	"fmt"
)

// mode is "": there is no THP mode to read here, so Allow allows nothing.
func mode() string { return "" }

// godebug is unused here (mode says no first).
func godebug() string { return "" }

// supported is an error: Make never advises here.
func supported() error {
	return fmt.Errorf("hugepage: no huge pages are asked for on this system: %w", errors.ErrUnsupported)
}

// advise does nothing where huge pages are not asked for by madvise.
func advise(start, length uintptr) {}

// unadvise does nothing either.
func unadvise(start, length uintptr) {}

// advisedAt is an error: there is no advice to read.
func advisedAt(p uintptr) (bool, error) {
	return false, fmt.Errorf("hugepage: reading the advice of %#x: %w", p, errors.ErrUnsupported)
}
