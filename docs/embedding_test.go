// Package docs holds no code: its tests keep the examples of the Markdown
// pages beside them true. It must not be imported.
package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// firstGoBlock is the body of the first ```go block of a Markdown page.
func firstGoBlock(t *testing.T, page string) string {
	t.Helper()
	md, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n```go\n(.*?)\n```\n").FindSubmatch(md)
	if m == nil {
		t.Fatalf("%s has no ```go block", page)
	}
	return string(m[1]) + "\n"
}

// requireBlocks are the require directives of go.mod's text data. A
// module that needs myelin's packages lists them too, so that its module
// graph is complete and pruned as myelin's is: the go command then reads
// no go.mod beyond those myelin's own build reads, which a module cache
// filled by building myelin holds (an old dependency's go.mod that only a
// whole, unpruned graph needs is not there on a fresh machine).
func requireBlocks(data string) string {
	return strings.Join(regexp.MustCompile(`(?ms)^require \($.*?^\)$|^require [^(\n]+$`).FindAllString(data, -1), "\n\n")
}

// moduleRoot is the directory of this repository's go.mod, and its go
// directive.
func moduleRoot(t *testing.T) (dir, goLine string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	goLine = regexp.MustCompile(`(?m)^go \S+$`).FindString(string(data))
	if !strings.Contains(string(data), "module github.com/myelin-run/myelin\n") || goLine == "" {
		t.Fatalf("%s is not myelin's go.mod", gomod)
	}
	return filepath.Dir(gomod), goLine
}

// The first example of docs/embedding.md is a whole program that a module
// outside this repository can build against github.com/myelin-run/myelin,
// and it runs: against a scripted model on loopback it calls its own tool
// and prints the answer. The module is made in a temporary directory with a
// replace to this checkout and this go.sum, built offline (GOPROXY=off:
// only the module cache), so that the page and its test cannot drift.
func TestTheEmbeddingExampleBuildsAndRunsInAModuleOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program in a module of its own (tens of seconds cold)")
	}
	root, goLine := moduleRoot(t)
	code := firstGoBlock(t, "embedding.md")
	if !strings.HasPrefix(code, "package main\n") {
		t.Fatalf("the first ```go block of embedding.md is not a whole program:\n%s", code)
	}
	mod := t.TempDir()
	if strings.HasPrefix(mod, root+string(filepath.Separator)) {
		t.Fatalf("the temporary module %s is inside the repository %s", mod, root)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/weather\n\n" + goLine + "\n\n" +
		"require github.com/myelin-run/myelin v0.0.0\n\n" + requireBlocks(string(ours)) + "\n\n" +
		"replace github.com/myelin-run/myelin => " + root + "\n"
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "main.go": code} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	bin := filepath.Join(mod, "weather")
	for _, args := range [][]string{{"build", "-o", bin, "."}, {"vet", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = mod, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a module of its own: %v\n%s\nmain.go:\n%s", strings.Join(args, " "), err, out, code)
		}
	}

	srv := providertest.NewAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "weather--lookup", Input: `{"city":"Oslo"}`}}},
		providertest.Step{Text: "It is sunny in Oslo."})
	work := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL="+srv.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the example program: %v\nstderr: %s", err, stderr.String())
	}
	if want := "It is sunny in Oslo.\n(end_turn)\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "[weather--lookup: sunny in Oslo]\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(work, ".myelin", "history.db")); err != nil {
		t.Errorf("the program kept no history in its workspace: %v", err)
	}
}
