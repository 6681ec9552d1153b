// Package hugepage makes the large arrays a process builds at its start —
// the messages a resume unpacks, the first request's body — in memory the
// kernel backs with huge pages, when the process has asked for it.
//
// Why: a fresh `myelin run` on a long stored conversation first-touches
// some 50 MB it has just allocated (100,000 messages unpacked, a 22 MB
// body), and on Linux with transparent huge pages in "madvise" mode (the
// default of many distributions) each 4 KiB of it costs a page fault: the
// faults were about 40% of such a resume's CPU (docs/performance.md,
// "Huge pages for a resume's arrays"). Advised memory is faulted in 2 MiB
// at a time.
//
// It must not touch memory that is in use, nor advise a long-running
// process's heap for its life: memory advised stays advised after the
// collector frees it, and the kernel's khugepaged may then fill freed
// 4 KiB pages back in to make a huge page, so a server's resident memory
// could grow. So nothing is advised unless Allow was called, and the
// caller calls Stop once its start is over (cmd/myelin: run and chat,
// until their first request is sent). Elsewhere than Linux it only
// allocates.
package hugepage

import (
	"sync/atomic"
	"unsafe"
)

// size is a huge page on the platforms where advising does anything
// (x86-64, and arm64 with 4 KiB pages: 2 MiB).
const size = 2 << 20

// least is the smallest array advised: one with at least one whole huge
// page inside it wherever it lies, and large enough that its page faults
// matter.
const least = 2 * size

// allowed is whether Make advises: between Allow and Stop.
var allowed atomic.Bool

// Allow has Make advise from now until Stop.
func Allow() { allowed.Store(true) }

// Stop has Make allocate as make does from now on. Memory advised before
// stays advised.
func Stop() { allowed.Store(false) }

// Allowed reports whether Make advises now: between Allow and Stop.
func Allowed() bool { return allowed.Load() }

// Make is make([]E, n, c) — it panics as make does on a bad length or
// capacity — and, between Allow and Stop, an array of at least 4 MiB has
// the 2 MiB-aligned part of it advised for huge pages before anything
// touches it. Memory the collector gives out again has been touched (its
// pages are already in), so advising it changes nothing; Make is for the
// arrays of a process's start, when the heap is fresh.
func Make[E any](n, c int) []E {
	s := make([]E, n, c)
	if c > 0 && allowed.Load() {
		var e E
		advise(uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(c)*unsafe.Sizeof(e))
	}
	return s
}

// Advised reports whether the whole huge pages inside s's array (its
// capacity) are advised — false for an array with none — read from the
// kernel's account of this process's memory (Linux's /proc/self/smaps;
// elsewhere an error wrapping errors.ErrUnsupported). It is for tests
// that hold a caller to making its arrays with Make; it reads a file
// and must not be on a path that matters.
func Advised[E any](s []E) (bool, error) {
	var e E
	start, length := aligned(uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(cap(s))*unsafe.Sizeof(e))
	if length == 0 {
		return false, nil
	}
	first, err := advisedAt(start)
	if err != nil || !first {
		return false, err
	}
	return advisedAt(start + length - 1)
}

// aligned is the part of [p, p+n) made of whole huge pages: start and
// length, 0 for none (or for an array smaller than least).
func aligned(p, n uintptr) (start, length uintptr) {
	if n < least {
		return 0, 0
	}
	start = (p + size - 1) &^ (size - 1)
	end := (p + n) &^ (size - 1)
	if end <= start {
		return 0, 0
	}
	return start, end - start
}
