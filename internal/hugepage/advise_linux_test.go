package hugepage

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"
)

// flagged is advisedAt(p), the test failed on an error.
func flagged(t *testing.T, p uintptr) bool {
	t.Helper()
	ok, err := advisedAt(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// need skips a test where Make never advises: a kernel whose THP mode is
// not "madvise" (nothing to install: the machine's setting).
func need(t *testing.T) {
	if err := supported(); errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
}

func at[E any](s []E) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

type part struct {
	s   string
	n   int
	ptr *int
}

func TestMakeAdvisesTheWholeHugePagesOfALargeArrayUntilStop(t *testing.T) {
	need(t)
	defer Stop()
	Allow()
	if !Allowed() {
		t.Fatal("Allow on a kernel in madvise mode allowed nothing")
	}
	big := Make[byte](0, 16<<20)
	parts := Make[part](100, 300000) // a pointerful array, as the unpacked parts: 9.6 MB (4.8 on 32 bits)
	small := Make[byte](0, 1<<20)
	type array struct {
		name string
		p, n uintptr
	}
	check := func(when string, a array, want bool) {
		t.Helper()
		start, length := aligned(a.p, a.n)
		if length == 0 {
			if flagged(t, a.p) {
				t.Errorf("%s: %s was advised, want none of it", when, a.name)
			}
			return
		}
		if got := flagged(t, start); got != want {
			t.Errorf("%s: %s's first whole huge page advised %v, want %v", when, a.name, got, want)
		}
		if got := flagged(t, start+length-1); got != want {
			t.Errorf("%s: %s's last whole huge page advised %v, want %v", when, a.name, got, want)
		}
		if start > a.p && flagged(t, start-1) {
			// the bytes before the first whole page lie in memory that
			// may hold other objects: left as they were
			t.Errorf("%s: the memory before %s's first whole huge page was advised too", when, a.name)
		}
	}
	made := []array{
		{"a 16 MiB byte array", at(big), uintptr(cap(big))},
		{"an array of 300,000 structs", at(parts), uintptr(cap(parts)) * unsafe.Sizeof(part{})},
	}
	for _, a := range made {
		check("while allowed", a, true)
	}
	check("while allowed", array{"a 1 MiB array", at(small), uintptr(cap(small))}, false)

	Stop()
	if Allowed() {
		t.Fatal("still allowed after Stop")
	}
	for _, a := range made {
		check("after Stop", a, false) // the advice taken back
	}
	after := Make[byte](0, 16<<20)
	check("after Stop", array{"a 16 MiB array made after it", at(after), uintptr(cap(after))}, false)
	runtime.KeepAlive(big) // alive until the reads are done
	runtime.KeepAlive(after)
	runtime.KeepAlive(small)
	if len(parts) != 100 || cap(parts) != 300000 {
		t.Fatalf("Make's length and capacity: %d, %d", len(parts), cap(parts))
	}
}
