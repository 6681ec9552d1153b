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
