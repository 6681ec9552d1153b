package hugepage

import "testing"

func TestAlignedIsTheWholeHugePagesInsideAnArray(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name          string
		p, n          uintptr
		start, length uintptr
	}{
		{"aligned start, 4 MiB", 4 * size, 4 * mib, 4 * size, 4 * mib},
		{"unaligned start: the pages after it", 4*size + 4096, 8 * mib, 5 * size, 6 * mib},
		{"unaligned end: the pages before it", 4 * size, 5*mib + 100, 4 * size, 4 * mib},
		{"just under the least: nothing", 4 * size, least - 1, 0, 0},
		{"least, unaligned: its one whole page", size + 1, least, 2 * size, size},
		{"empty", 4 * size, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			start, length := aligned(c.p, c.n)
			if start != c.start || length != c.length {
				t.Fatalf("aligned(%#x, %d) = %#x, %d; want %#x, %d", c.p, c.n, start, length, c.start, c.length)
			}
			if length > 0 && (start < c.p || start+length > c.p+c.n || start%size != 0 || length%size != 0) {
				t.Fatalf("[%#x, +%d) is not whole huge pages inside [%#x, +%d)", start, length, c.p, c.n)
			}
		})
	}
}

func TestOnlyAKernelOnMadviseWithoutDisablethpIsAdvised(t *testing.T) {
	for _, c := range []struct {
		mode, godebug string
		want          bool
	}{
		{"always [madvise] never\n", "", true},
		{"always [madvise] never\n", "madvdontneed=1,disablethp=0", true},
		{"always [madvise] never\n", "disablethp=1", false},
		{"always [madvise] never\n", "madvdontneed=1, disablethp=1", false},
		{"[always] madvise never\n", "", false}, // huge pages unasked
		{"always madvise [never]\n", "", false},
		{"", "", false}, // no THP in this kernel
	} {
		if got := usable(c.mode, c.godebug); got != c.want {
			t.Errorf("usable(%q, %q) = %v, want %v", c.mode, c.godebug, got, c.want)
		}
	}
}

func TestMakeOfNothingAndOfSmallArraysIsMake(t *testing.T) {
	Allow()
	defer Stop()
	for _, c := range [][2]int{{0, 0}, {3, 5}, {0, 1 << 20}} {
		s := Make[int64](c[0], c[1])
		if len(s) != c[0] || cap(s) != c[1] {
			t.Errorf("Make(%d, %d): length %d, capacity %d", c[0], c[1], len(s), cap(s))
		}
	}
	if s := Make[struct{}](10, 1<<30); len(s) != 10 {
		t.Errorf("Make of empty structs: length %d", len(s))
	}
}
