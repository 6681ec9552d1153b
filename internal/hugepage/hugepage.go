// Package hugepage makes the large arrays a process builds at its start —
// the messages a resume unpacks, the first request's body — in memory the
// kernel backs with huge pages, when the process has asked for it.
//
// Why: a fresh `myelin run` on a long stored conversation first-touches
// some 50 MB it has just allocated (100,000 messages unpacked, a 22 MB
// body), and on Linux with transparent huge pages in "madvise" mode (the
// default of many distributions) each 4 KiB of it costs a page fault: a
// resume of 100,000 messages took 24,000 of them, about 40% of its CPU
// (docs/performance.md, "Huge pages for a run's start"). Advised memory
// is faulted in 2 MiB at a time.
//
// It must not touch memory that is in use by anything but the array it
// made, nor leave a long-running process's heap advised: memory advised
// stays advised after the collector frees it, and the kernel's khugepaged
// may then fill freed 4 KiB pages back in to make a huge page, so a
// server's resident memory could grow. So nothing is advised unless Allow
// was called, the caller calls Stop once its start is over (cmd/myelin:
// run and chat, once their first request is sent), and Stop takes the
// advice back from every range it gave it to: what the start made keeps
// the huge pages it has, and none are made there again. It advises only
// where the kernel's mode is "madvise" (with "always" the heap has huge
// pages unasked, with "never" none can be had) and GODEBUG's disablethp
// is not set. Elsewhere than Linux it only allocates.
//
// The cost it takes on: a fault in advised memory may compact memory to
// find 2 MiB free (the kernel's THP "defrag" setting, "madvise" by
// default), which on a machine whose memory is fragmented can take
// milliseconds where 4 KiB faults would not.
package hugepage

import (
	"strings"
	"sync"
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

// given is the ranges advised since Allow, for Stop to take the advice
// back from; mu guards it and orders Make's advice with Stop.
var (
	mu    sync.Mutex
	given []span
)

// span is a range of memory advised: its start and length.
type span struct{ start, length uintptr }

// Allow has Make advise from now until Stop, where this kernel gives
// huge pages to advised memory only (usable).
func Allow() {
	if usable(mode(), godebug()) {
		allowed.Store(true)
	}
}

// Stop has Make allocate as make does from now on, and takes the advice
// back from every range Make advised since Allow: their huge pages stay,
// and no new ones are made there (MADV_NOHUGEPAGE). It writes nothing when
// nothing was allowed (it may be called on every event of an answer).
func Stop() {
	if !allowed.Load() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	allowed.Store(false)
	for _, s := range given {
		unadvise(s.start, s.length)
	}
	given = nil
}

// Allowed reports whether Make advises now: between an Allow that found
// huge pages to be had and Stop.
func Allowed() bool { return allowed.Load() }

// Make is make([]E, n, c) — it panics as make does on a bad length or
// capacity — and, between Allow and Stop, an array of at least 4 MiB has
// the 2 MiB-aligned part of it advised for huge pages before anything
// touches it. Memory the collector gives out again has been touched (its
// pages are already in), so advising it saves no fault; Make is for the
// arrays of a process's start, when the heap is fresh.
func Make[E any](n, c int) []E {
	s := make([]E, n, c)
	if c > 0 && allowed.Load() {
		var e E
		start, length := aligned(uintptr(unsafe.Pointer(unsafe.SliceData(s))), uintptr(c)*unsafe.Sizeof(e))
		if length > 0 {
			mu.Lock()
			if allowed.Load() { // not stopped meanwhile: Stop must find it in given
				advise(start, length)
				given = append(given, span{start, length})
			}
			mu.Unlock()
		}
	}
	return s
}

// Advised reports whether the whole huge pages inside s's array (its
// capacity) are advised now — false for an array with none — read from
// the kernel's account of this process's memory (Linux's
// /proc/self/smaps). Where Make never advises — elsewhere than Linux, or
// on a kernel whose mode is not "madvise" — it is an error wrapping
// errors.ErrUnsupported. It is for tests that hold a caller to making its
// arrays with Make; it reads a file and must not be on a path that
// matters.
func Advised[E any](s []E) (bool, error) {
	if err := supported(); err != nil {
		return false, err
	}
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

// usable reports whether Make should advise on a kernel whose THP mode
// (/sys/kernel/mm/transparent_hugepage/enabled) reads as mode, under
// GODEBUG godebug: only in "madvise" mode, and not with disablethp=1 (the
// runtime's setting to keep the heap off huge pages).
func usable(mode, godebug string) bool {
	if !strings.Contains(mode, "[madvise]") {
		return false
	}
	for _, kv := range strings.Split(godebug, ",") {
		if strings.TrimSpace(kv) == "disablethp=1" {
			return false
		}
	}
	return true
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
