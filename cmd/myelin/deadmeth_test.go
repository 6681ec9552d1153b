package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unreachedMethods are exported methods of linked types that nothing in
// myelin calls nor reaches through an interface: the linker drops them
// unless a reachable function looks methods up by reflection (then it keeps
// every exported method of every type used in an interface, ~60k functions
// and ~50 MB more; docs/performance.md "Eleventh session: the linker's
// method elimination"). If one of them becomes used for real, name another.
var unreachedMethods = []string{
	"net/http.(*Client).Head",
	"bytes.(*Buffer).Peek",
}

// TestAPlainBuildKeepsTheLinkersMethodElimination builds myelin as `go
// build` does, with no tags (as `go install` does: until myelin linked
// gRPC-Go no more, only `-tags grpcnotrace`, gRPC's switch that unlinks
// golang.org/x/net/trace, whose init reaches text/template's reflective
// field lookup, kept it), and holds it to the linker's dead method elimination: no
// function the compiler marked as looking methods up by reflection is
// reachable (-ldflags=-dumpdep marks them <ReflectMethod>), and
// unreachedMethods are not in the binary. With google.golang.org/protobuf
// v1.36.11 it failed: internal/descfmt's MethodByName("Methods") kept
// reflect's Methods iterators (Go 1.26), which are so marked.
func TestAPlainBuildKeepsTheLinkersMethodElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and links the binary (~1 min)")
	}
	dir := t.TempDir()
	bin, dump := filepath.Join(dir, "myelin"), filepath.Join(dir, "deps.txt")
	out, err := os.Create(dump)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", bin, ".")
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	out.Close()
	if err != nil {
		b, _ := os.ReadFile(dump)
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%s", err, tail(string(b), 4000))
	}
	if chains, err := reflectMethodChains(dump, 3); err != nil {
		t.Fatal(err)
	} else if len(chains) > 0 {
		t.Errorf("the linker keeps every exported method: these functions that look methods up by reflection are reachable (each from the program's roots, as -ldflags=-dumpdep marked it first):\n%s\n"+
			"(a method reached from its type, type:T -> T.M, was kept because an interface call or a MethodByName with a constant name asks for a method named M somewhere: grep the dump for the interface, or the code for MethodByName(\"M\"))",
			strings.Join(chains, "\n"))
	}
	nm, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	present := map[string]bool{}
	for _, line := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && (f[1] == "T" || f[1] == "t") {
			present[f[2]] = true
		}
	}
	if !present["main.main"] {
		t.Fatalf("go tool nm lists no main.main: the symbol table's format changed?\n%s", tail(string(nm), 2000))
	}
	for _, m := range unreachedMethods {
		if present[m] {
			t.Errorf("%s is linked: the linker's method elimination is off, or something now uses it (then name another in unreachedMethods)", m)
		}
	}
	t.Logf("%d functions in the plain build", len(present))
}

// reflectMethodChains reads a -ldflags=-dumpdep dump ("from -> to" lines in
// the order the linker reached each symbol, flags such as <ReflectMethod>
// after a name) and returns, for at most n of the reached symbols marked
// <ReflectMethod>, the chain of first reachers from it back to a root. It
// streams the dump once and holds its graph only when a symbol is marked
// (a second read): the test binary's own peak memory is what every child
// it starts later inherits as its rusage peak.
func reflectMethodChains(dump string, n int) ([]string, error) {
	var marked []string
	edges := 0
	if err := eachEdge(dump, func(from, to string, flagged bool) {
		edges++
		if flagged && len(marked) < n && !slices.Contains(marked, to) {
			marked = append(marked, to)
		}
	}); err != nil {
		return nil, err
	}
	if edges == 0 {
		return nil, fmt.Errorf("the linker's dump %s has no edge: did -ldflags=-dumpdep change?", dump)
	}
	if len(marked) == 0 {
		return nil, nil
	}
	parent := map[string]string{}
	if err := eachEdge(dump, func(from, to string, _ bool) {
		if _, seen := parent[to]; !seen {
			parent[to] = from
		}
	}); err != nil {
		return nil, err
	}
	var chains []string
	for _, m := range marked {
		var c []string
		for s, i := m, 0; s != "" && s != "_" && i < 60; s, i = parent[s], i+1 {
			c = append(c, s)
		}
		chains = append(chains, "  "+strings.Join(c, "\n    <- "))
	}
	return chains, nil
}

// eachEdge calls edge with each "from -> to" line of the dump, the names
// without their flags, and whether to is marked <ReflectMethod>.
func eachEdge(dump string, edge func(from, to string, flagged bool)) error {
	f, err := os.Open(dump)
	if err != nil {
		return fmt.Errorf("reading the linker's dump: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		edge(symbolName(from), symbolName(to), strings.Contains(to, "<ReflectMethod>"))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the linker's dump %s: %w", dump, err)
	}
	return nil
}

// symbolName is a dump's symbol without the flags the linker writes after
// it (" <UsedInIface><ReflectMethod>").
func symbolName(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		return s[:i]
	}
	return s
}
