package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/server"
)

// lockedBuffer is a writer the serve command writes stderr to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeRunsATurnOverHTTPAndStopsOnInterrupt(t *testing.T) {
	serveATurn(t)
}

// serveATurn runs serve with args added to its own, starts a turn over
// HTTP that reads a file, follows its events to the end, stops serve with
// an interrupt, and returns the conversation's id.
func serveATurn(t *testing.T, args ...string) string {
	t.Helper()
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "It says alpha."})
	ctx, stop := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append([]string{"serve", "--workspace", dir, "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, &stderr)
	}()

	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not say where it listens: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	post := func(path, body string) map[string]any { return postJSON(t, base+path, body) }
	id := post("/v1/conversations", "")["id"].(string)
	started := post("/v1/conversations/"+id+"/turns", `{"prompt":"what does a.txt say?"}`)
	resp, err := http.Get(base + started["events"].(string))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var seen []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("events ended (%v) after %v", err, seen)
		}
		if ev, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
			seen = append(seen, ev)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"reason":"end_turn"`) {
			break
		}
	}
	if !strings.Contains(strings.Join(seen, " "), "turn.started") || seen[len(seen)-1] != "turn.finished" {
		t.Fatalf("events %v", seen)
	}

	stop() // the interrupt: serve stops, ending the event stream it serves
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop on the interrupt: %s", stderr.String())
	}
	// one line per request and per turn (--log-format text), no prompt
	for _, want := range []string{"msg=request method=POST path=/v1/conversations/" + id + "/turns status=202 bytes=", "msg=turn conversation=" + id + " turn=turn_"} {
		if !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "what does a.txt say") {
			t.Fatalf("serve's log lacks %q (or holds the prompt):\n%s", want, stderr.String())
		}
	}
	return id
}

func TestServeRefusesBadElicitationAndBackgroundFlags(t *testing.T) {
	dir := workspaceWith(t, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--elicitation-timeout", "0s"}, "--elicitation-timeout 0s: give a duration > 0 (default 5m0s)"},
		{[]string{"--background-scripts", "0"}, "--background-scripts 0: give 1 or more (default 3)"},
		{[]string{"--wake-gap", "-1s"}, "--wake-gap -1s: give 0 or more"},
		{[]string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
	} {
		_, errOut, code := cli(t, append([]string{"serve", "--workspace", dir}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		}
	}
}

// postJSON posts body to url and decodes the answer, which must be a 2xx.
func postJSON(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %v %v", url, resp.StatusCode, v, err)
	}
	return v
}

func TestServeOffLoopbackNeedsAToken(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	dir := workspaceWith(t, nil)
	_, errOut, code := cli(t, "serve", "--workspace", dir, "--addr", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errOut, "--addr 0.0.0.0:0 is not a loopback address: give a token") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = cli(t, "serve", "--workspace", dir, "--conversation", "x")
	if code != exitUsage || !strings.Contains(errOut, "over the API each request names its conversation") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// A server that pages of other origins may call, or that has a token
// anyone could guess, does not start: it says what to give instead.
func TestServeRefusesCORSWithoutATokenAndATokenTooWeak(t *testing.T) {
	dir := workspaceWith(t, nil)
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--cors-origin", "*"}, "--cors-origin * lets any web page call the API"},
		{"", []string{"--cors-origin", "https://app.example"}, "it needs a token"},
		{"", []string{"--token", "t"}, "at least 16 characters"},
		{"   ", nil, "white space"},
		{"", []string{"--token", "0123456789 abcdef", "--addr", "0.0.0.0:0"}, "at least 16 characters"},
	} {
		t.Setenv("MYELIN_TOKEN", tc.env)
		_, errOut, code := cli(t, append([]string{"serve", "--workspace", dir}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("serve %v (MYELIN_TOKEN %q): exit %d: %s; want a usage error saying %q", tc.args, tc.env, code, errOut, tc.want)
		}
	}
}

// Issue 27 §12: `serve --help` listed -continue, -conversation and -wait,
// which serve refuses. Its help offers only what it takes, and a flag of
// run's it does not take says why.
func TestServeHelpOffersOnlyTheFlagsServeTakes(t *testing.T) {
	out, _, code := cli(t, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d", code)
	}
	for _, name := range []string{"-continue", "-conversation", "-wait"} {
		if regexp.MustCompile(`(?m)^\s+` + name + `\b`).MatchString(out) {
			t.Errorf("serve --help lists %s, which serve refuses", name)
		}
	}
	for _, name := range []string{"-shutdown-grace", "-addr", "-max-rounds", "-workspace"} {
		if !regexp.MustCompile(`(?m)^\s+` + name + `\b`).MatchString(out) {
			t.Errorf("serve --help does not list %s", name)
		}
	}
	dir := workspaceWith(t, nil)
	for _, args := range [][]string{{"--conversation", "x"}, {"--continue"}, {"-wait"}, {"--conversation=x"}} {
		_, errOut, code := cli(t, append([]string{"serve", "--workspace", dir}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "is run's and chat's: over the API each request names its conversation") {
			t.Errorf("serve %v: exit %d: %s; want a usage error saying it is run's and chat's", args, code, errOut)
		}
	}
}

// Issue 27 §12, §8: every numeric flag of serve is checked against its
// range, a value out of it a usage error (exit 2) naming the flag, the
// value and the range, never replaced in silence; run's flags are checked
// as run checks them.
func TestServeRefusesEveryNumericFlagOutOfItsRange(t *testing.T) {
	dir := workspaceWith(t, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "-1", "--worker"}, "--workers -1: give how many turns this process runs at once, 0 (none: it only queues turns) to 10000 (default 4)"},
		{[]string{"--workers", "10001", "--worker"}, "--workers 10001: give how many turns"},
		{[]string{"--lease", "0s", "--worker"}, "--lease 0s: give a duration of 1s or more (default 30s)"},
		{[]string{"--lease", "500ms", "--worker"}, "--lease 500ms: give a duration of 1s or more"},
		{[]string{"--shutdown-grace", "-1s"}, "--shutdown-grace -1s: give 0 (cancel running turns at once) or more (default 30s)"},
		{[]string{"--shutdown-grace", "10s", "--worker"}, "--shutdown-grace has nothing to wait for with --worker"},
		{[]string{"--elicitation-timeout", "-1m"}, "--elicitation-timeout -1m0s: give a duration > 0"},
		{[]string{"--approval-timeout", "0s"}, "--approval-timeout 0s: give a duration > 0 (default 5m0s)"},
		{[]string{"--approval-timeout", "-1m"}, "--approval-timeout -1m0s: give a duration > 0"},
		{[]string{"--max-rounds", "0"}, "--max-rounds 0: give the most tool rounds of a turn, 1 or more"},
		{[]string{"--max-tokens", "-5"}, "--max-tokens -5: give the most tokens of an answer, 1 or more"},
		{[]string{"--keep-rounds", "0"}, "--keep-rounds 0"},
		{[]string{"--context-high", "120"}, "--context-high 120"},
		{[]string{"--inline-cap", "10"}, "--inline-cap"},
		{[]string{"--provider", "foo"}, `--provider "foo"`},
		{[]string{"--addr", "127.0.0.1:70000"}, "--addr 127.0.0.1:70000: the port must be 0 (a free one) to 65535"},
		{[]string{"--addr", "127.0.0.1"}, `--addr "127.0.0.1": give HOST:PORT`},
		{[]string{"--max-streams", "0"}, "--max-streams 0: give how many event streams the server keeps open at once, 1 to 1000000 (default 1024)"},
		{[]string{"--max-streams", "1000001"}, "--max-streams 1000001: give how many event streams"},
		{[]string{"--max-streams-per-client", "-1"}, "--max-streams-per-client -1: give how many event streams one client address may keep open at once, 1 to 1000000 (default 128)"},
	} {
		_, errOut, code := cli(t, append([]string{"serve", "--workspace", dir}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("serve %v: exit %d: %s; want a usage error saying %q", c.args, code, errOut, c.want)
		}
		if first, _, _ := strings.Cut(errOut, "\n"); !strings.HasPrefix(first, "myelin serve: ") {
			t.Errorf("serve %v: the error's first line %q does not say what was wrong", c.args, first)
		}
	}
}

// --max-streams and --max-streams-per-client are the server's bounds on
// the event streams open at once (server.Server's Watchers and
// WatchersPerClient, which refuse one more with 429); without them, the
// server's defaults.
func TestServeStreamFlagsAreTheServersBounds(t *testing.T) {
	dir := workspaceWith(t, nil)
	for _, c := range []struct {
		args               []string
		streams, perClient int
	}{
		{nil, server.DefaultWatchers, server.DefaultWatchersPerClient},
		{[]string{"--max-streams", "20000", "--max-streams-per-client", "5000"}, 20000, 5000},
	} {
		var stderr strings.Builder
		setup, code, done := parseServe(append([]string{"--workspace", dir}, c.args...), io.Discard, &stderr)
		if done {
			t.Fatalf("serve %v: exit %d: %s", c.args, code, stderr.String())
		}
		api := setup.newAPI(io.Discard)
		if api.Watchers != c.streams || api.WatchersPerClient != c.perClient {
			t.Errorf("serve %v: the server takes %d streams, %d per client; want %d and %d", c.args, api.Watchers, api.WatchersPerClient, c.streams, c.perClient)
		}
	}
}
