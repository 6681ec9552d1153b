package hugepage

import (
	"os"
	"runtime"
	"strings"
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

// thp skips a test on a kernel that gives no huge pages to advised memory.
func thp(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(b), "[never]") {
		t.Skipf("transparent huge pages are not on here (%q, %v)", b, err)
	}
}

func at[E any](s []E) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

func TestMakeAdvisesTheWholeHugePagesOfALargeArrayOnlyWhileAllowed(t *testing.T) {
	thp(t)
	Allow()
	big := Make[byte](0, 16<<20)
	type part struct {
		s   string
		n   int
		ptr *int
	}
	parts := Make[part](100, 300000) // a pointerful array, as the unpacked parts
	Stop()
	after := Make[byte](0, 16<<20)
	Allow()
	small := Make[byte](0, 1<<20)
	Stop()
	for _, c := range []struct {
		name string
		p, n uintptr
		want bool
	}{
		{"a 16 MiB byte array made while allowed", at(big), uintptr(cap(big)), true},
		{"a 7 MB array of structs made while allowed", at(parts), uintptr(cap(parts)) * unsafe.Sizeof(part{}), true},
		{"a 16 MiB array made after Stop", at(after), uintptr(cap(after)), false},
		{"a 1 MiB array made while allowed", at(small), uintptr(cap(small)), false},
	} {
		start, length := aligned(c.p, c.n)
		if length == 0 {
			start = c.p // the small array: none of it may be advised
		}
		if got := flagged(t, start); got != c.want {
			t.Errorf("%s: its first whole huge page advised %v, want %v", c.name, got, c.want)
		}
		if c.want && flagged(t, start+length-1) != true {
			t.Errorf("%s: its last whole huge page is not advised", c.name)
		}
		if c.want && start > c.p && flagged(t, start-1) {
			// the bytes before the first whole page lie in memory that
			// may hold other objects: left as they were
			t.Errorf("%s: the memory before its first whole huge page was advised too", c.name)
		}
	}
	runtime.KeepAlive(big) // alive until the reads are done
	runtime.KeepAlive(after)
	if len(parts) != 100 || cap(small) != 1<<20 {
		t.Fatalf("Make's lengths: %d, %d", len(parts), cap(small))
	}
}
