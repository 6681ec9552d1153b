// Package skipped counts the tests a package skips for want of something
// outside Go — a PostgreSQL server, a browser, the MCP reference servers
// from npm, git — and, once the package's tests have run, says so in one
// line where the person who ran them sees it: `go test ./...` prints
// nothing but "ok" for a package that passed, however many of its tests
// were skipped, so a run without the database looked like a run with it.
//
// The line goes to the terminal (/dev/tty), which the go command does not
// capture; without one (CI, a pipe) nothing is written: under CI=true the
// tests that need something fail rather than skip. It is for tests only,
// and must not be imported by anything else.
package skipped

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

var (
	mu   sync.Mutex
	pkg  string         // the import path of the package whose tests ran
	by   map[string]int // tests skipped, by what they wanted
	hows map[string]string
)

// Need skips t for want of what ("MYELIN_TEST_POSTGRES", "chromium"),
// saying how to have it, and counts it for the package's line (Main).
func Need(t testing.TB, what, how string) {
	t.Helper()
	mu.Lock()
	if by == nil {
		by, hows = map[string]int{}, map[string]string{}
	}
	by[what]++
	hows[what] = how
	if pkg == "" {
		pkg = testPackage()
	}
	mu.Unlock()
	t.Skipf("%s is not available: %s", what, how)
}

// Main runs the package's tests and returns their exit code, having
// written the package's line of what was skipped, if anything was, to
// the terminal. A package's TestMain calls os.Exit(skipped.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if line := Line(); line != "" {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, line)
			tty.Close()
		}
	}
	return code
}

// Line is the package's line of what its tests skipped for want of
// something, "" when nothing was.
func Line() string {
	mu.Lock()
	defer mu.Unlock()
	if len(by) == 0 {
		return ""
	}
	whats := make([]string, 0, len(by))
	for w := range by {
		whats = append(whats, w)
	}
	sort.Strings(whats)
	parts := make([]string, len(whats))
	for i, w := range whats {
		parts[i] = fmt.Sprintf("%d for want of %s (%s)", by[w], w, hows[w])
	}
	return fmt.Sprintf("%s: tests skipped: %s; .ci/run installs what they need and runs them all", pkg, strings.Join(parts, "; "))
}

// testPackage is the import path of the package of the test function on
// the stack (a function named Test...).
func testPackage() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		name := f.Function // path/to/pkg.TestX, or path/to/pkg.TestX.func1
		if i := strings.LastIndex(name, "/"); i >= 0 {
			if j := strings.Index(name[i:], ".Test"); j >= 0 {
				return name[:i+j]
			}
		}
		if !more {
			return "this package"
		}
	}
}
