package mcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// conformanceServerBound bounds the suite's run of every server scenario
// against one `myelin mcp serve`: they run one after another in one Node
// process, in seconds on an idle machine.
const conformanceServerBound = 2 * time.Minute

// serverScenarios asks the suite which server scenarios it has, pending
// ones among them (`list --server`).
func serverScenarios(t *testing.T, suite []string) []string {
	t.Helper()
	out, err := exec.Command(suite[0], suite[1], "list", "--server").CombinedOutput()
	if err != nil {
		t.Fatalf("the suite did not list its server scenarios: %v\n%s", err, out)
	}
	names := parseServerList(string(out))
	if len(names) == 0 {
		t.Fatalf("the suite listed no server scenarios:\n%s", out)
	}
	return names
}

// parseServerList reads the names `list --server` gives, one a line as
// `  - NAME [SPEC VERSIONS]`.
func parseServerList(out string) []string {
	var names []string
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			if name, _, _ := strings.Cut(rest, " "); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// serverRuns are the results the suite saved under dir by server
// scenario: it names a server scenario's directory server-SCENARIO-TIME.
func serverRuns(dir string) (map[string]scenarioRun, error) {
	runs, err := readRuns(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]scenarioRun{}
	for name, r := range runs {
		scenario, ok := strings.CutPrefix(name, "server-")
		if !ok {
			return nil, fmt.Errorf("%s: not a server scenario's result directory (server-SCENARIO-TIME)", name)
		}
		out[scenario] = r
	}
	return out, nil
}

// startMCPServeWithFixtures starts `myelin mcp serve --http 127.0.0.1:0
// --conformance-fixtures` on a fresh workspace (HOME with it) and returns
// its URL, read from the line it prints on stderr, and its stderr so far
// as the test goes on. The server is stopped when the test ends.
func startMCPServeWithFixtures(t *testing.T, bin string) (url string, stderr *lockedBuffer) {
	t.Helper()
	ws := t.TempDir()
	cmd := exec.Command(bin, "mcp", "serve", "--http", "127.0.0.1:0", "--conformance-fixtures", "--workspace", ws)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "HOME="+ws)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting myelin mcp serve: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	stderr = &lockedBuffer{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if addr, ok := strings.CutPrefix(line, "myelin mcp serve: listening on "); ok {
				found <- addr
			}
		}
		_, _ = io.Copy(stderr, pipe)
		close(found)
	}()
	// The bound only keeps a server that never says where it listens from
	// hanging the test.
	select {
	case url, ok := <-found:
		if !ok {
			t.Fatalf("myelin mcp serve exited without saying where it listens:\n%s", stderr.String())
		}
		return url, stderr
	case <-time.After(time.Minute):
		t.Fatalf("myelin mcp serve did not say where it listens within a minute:\n%s", stderr.String())
	}
	return "", nil
}

// TestConformanceServerScenariosPassAgainstMyelinMCPServe runs every
// server scenario of the official MCP conformance suite (pending ones too)
// against the `myelin mcp serve --http` binary, with the test-only
// --conformance-fixtures flag giving the tools, resources and prompts the
// scenarios call by name, and fails on each scenario that does not pass
// unless server-out-of-scope.txt lists it with a reason — and on each
// listed one that passes, so that the list stays true. One server serves
// them all: each scenario connects a session of its own, and neither the
// fixtures nor myelin's tools keep state from one session to the next.
func TestConformanceServerScenariosPassAgainstMyelinMCPServe(t *testing.T) {
	suite := conformanceSuite(t)
	skip := outOfScope(t, "server-out-of-scope.txt")
	scenarios := serverScenarios(t, suite)
	for name := range skip {
		if !slices.Contains(scenarios, name) {
			t.Errorf("server-out-of-scope.txt lists %s, which is not a server scenario of the pinned suite", name)
		}
	}
	bin := buildMyelin(t)
	url, serverLog := startMCPServeWithFixtures(t, bin)
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), conformanceServerBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite[0], suite[1], "server", "--url", url, "--suite", "all", "--output-dir", results)
	cmd.Dir = t.TempDir()
	var summary bytes.Buffer
	cmd.Stdout, cmd.Stderr = &summary, &summary
	err := cmd.Run() // it exits 1 when a scenario fails; the results say which
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within %v: %v\n%s", conformanceServerBound, err, tail(summary.String(), 4000))
	}
	runs, err := serverRuns(results)
	if err != nil {
		t.Fatal(err)
	}
	judgeScenarios(t, "server", scenarios, runs, skip, "server-out-of-scope.txt", summary.String(), func(scenarioRun) string {
		return "myelin mcp serve's stderr:\n" + tail(serverLog.String(), 2000)
	})
}

func TestParseServerListReadsEachScenariosName(t *testing.T) {
	out := "Server scenarios (test against a server):\n  - server-initialize [2025-06-18,2025-11-25]\n  - json-schema-2020-12 [2025-11-25]\n\n"
	got := parseServerList(out)
	want := []string{"server-initialize", "json-schema-2020-12"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestServerRunsAreNamedWithoutTheSuitesServerPrefix(t *testing.T) {
	dir := writeChecks(t, map[string]string{
		"server-server-initialize-2026-12-03T19-22-01-556Z": `[{"id":"a","status":"SUCCESS"}]`,
		"server-ping-2026-12-03T19-22-01-557Z":              `[{"id":"b","status":"FAILURE"}]`,
	})
	runs, err := serverRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range runs {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ping", "server-initialize"}) || len(runs["ping"].failed()) != 1 {
		t.Errorf("got scenarios %q (ping failed %d checks), want ping and server-initialize (ping failed 1)", names, len(runs["ping"].failed()))
	}

	client := t.TempDir()
	if err := os.MkdirAll(filepath.Join(client, "initialize-2026-12-03T19-22-01-556Z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(client, "initialize-2026-12-03T19-22-01-556Z", "checks.json"), []byte(`[]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := serverRuns(client); err == nil || !strings.Contains(err.Error(), "not a server scenario's result directory") {
		t.Errorf("a client scenario's result: got %v, want an error saying it is not a server scenario's", err)
	}
}
