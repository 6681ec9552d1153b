package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// madvHugePage is MADV_HUGEPAGE (Linux's mman-common.h); package syscall
// has no name for it.
const madvHugePage = 14

// advise marks the whole huge pages inside [p, p+n) MADV_HUGEPAGE. An
// error is ignored: a kernel without transparent huge pages (EINVAL)
// leaves the memory as it was, which is what not asking gives.
func advise(p, n uintptr) {
	start, length := aligned(p, n)
	if length == 0 {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, start, length, madvHugePage)
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
