package hugepage

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// madvHugePage and madvNoHugePage are MADV_HUGEPAGE and MADV_NOHUGEPAGE
// (Linux's mman-common.h); package syscall has no names for them.
const (
	madvHugePage   = 14
	madvNoHugePage = 15
)

// modeFile is where Linux says when it gives anonymous memory huge pages.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// mode is the kernel's THP mode as modeFile reads ("always [madvise]
// never"), or "" when it cannot be read (a kernel without THP).
func mode() string {
	b, err := os.ReadFile(modeFile)
	if err != nil {
		return ""
	}
	return string(b)
}

// godebug is the process's GODEBUG.
func godebug() string { return os.Getenv("GODEBUG") }

// supported is nil where Make advises (Advised).
func supported() error {
	if m := mode(); !usable(m, godebug()) {
		return fmt.Errorf("hugepage: this kernel's transparent huge pages are %q, not on madvise (or GODEBUG has disablethp=1): nothing is advised: %w", strings.TrimSpace(m), errors.ErrUnsupported)
	}
	return nil
}

// advise marks [start, start+length), whole huge pages, MADV_HUGEPAGE. An
// error is ignored: the memory is then as it was, which is what not
// asking gives.
func advise(start, length uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, start, length, madvHugePage)
}

// unadvise takes advise's advice back: MADV_NOHUGEPAGE (the huge pages
// in the range stay; none are made there again).
func unadvise(start, length uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, start, length, madvNoHugePage)
}

// advisedAt reports whether the mapping of this process that holds
// address p is advised for huge pages: "hg" among its VmFlags in
// /proc/self/smaps.
func advisedAt(p uintptr) (bool, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, fmt.Errorf("hugepage: reading the advice of %#x: %w", p, err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= p && p < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(" "+strings.TrimPrefix(line, "VmFlags:")+" ", " hg "), nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("hugepage: reading the advice of %#x: %w", p, err)
	}
	return false, fmt.Errorf("hugepage: no mapping of this process holds %#x", p)
}
