package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// guardedMCP is a myelin mcp serve --http running in this process.
type guardedMCP struct {
	url    string
	stop   context.CancelFunc
	exited chan int
	stderr *lockedBuffer
}

// startGuardedMCP runs myelin mcp serve --http 127.0.0.1:0 with args
// added, in dir, and waits until it says where it listens.
func startGuardedMCP(t *testing.T, dir string, args ...string) *guardedMCP {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	s := &guardedMCP{stop: stop, exited: make(chan int, 1), stderr: &lockedBuffer{}}
	go func() {
		s.exited <- run(ctx, append([]string{"mcp", "serve", "--workspace", dir, "--http", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, s.stderr)
	}()
	t.Cleanup(func() {
		stop()
		<-s.exited
	})
	listening := regexp.MustCompile(`myelin mcp serve: listening on (http://127\.0\.0\.1:\d+/)`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case code := <-s.exited:
			t.Fatalf("mcp serve exited %d before it listened: %s", code, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp serve did not say where it listens: %q", s.stderr.String())
		}
	}
}

// end stops the server and returns its exit status.
func (s *guardedMCP) end(t *testing.T) int {
	t.Helper()
	s.stop()
	select {
	case code := <-s.exited:
		s.exited <- code // for the cleanup
		return code
	case <-time.After(time.Minute):
		t.Fatalf("mcp serve did not stop within a minute of its context's end: %s", s.stderr.String())
		return -1
	}
}

const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"guard-test","version":"1"}}}`

// post sends body to the server as an MCP client does, with headers
// added (a "Host" header sets the request's Host), and returns the answer
// with its body read.
func (s *guardedMCP) post(t *testing.T, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.url, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer of POST %s: %v", s.url, err)
	}
	return resp, string(got)
}

// wantRefusal fails unless resp is a refusal with status whose body is a
// JSON-RPC error (no id, code -32000) whose message holds each of want.
func wantRefusal(t *testing.T, what string, resp *http.Response, body string, status int, want ...string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("%s: a session %s was made for a refused request", what, sid)
	}
	var got struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%s: the body is not JSON (%v): %s", what, err, body)
	}
	if got.JSONRPC != "2.0" || got.ID != nil || got.Error.Code != -32000 {
		t.Errorf("%s: body %s, want a JSON-RPC 2.0 error with id null and code -32000", what, body)
	}
	for _, w := range want {
		if !strings.Contains(got.Error.Message, w) {
			t.Errorf("%s: message %q does not say %q", what, got.Error.Message, w)
		}
	}
}

// wantInitialized fails unless resp answers initialize: 200, a session,
// and the server's name.
func wantInitialized(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(body, `"serverInfo":{"name":"myelin"`) {
		t.Fatalf("%s: initialize answered %d (session %q): %s", what, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
}

// refusedToStart runs myelin mcp serve with args and returns its exit
// status and stderr, failing the test (rather than waiting forever) if it
// starts listening instead.
func refusedToStart(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stderr lockedBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append([]string{"mcp", "serve"}, args...), strings.NewReader(""), io.Discard, &stderr)
	}()
	deadline := time.After(time.Minute)
	for {
		select {
		case code := <-exited:
			return code, stderr.String()
		case <-deadline:
			stop()
			t.Fatalf("mcp serve %q neither refused to start nor listened within a minute: %s", args, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if strings.Contains(stderr.String(), "listening on") {
			stop()
			<-exited
			t.Fatalf("mcp serve %q started listening, want it refused: %s", args, stderr.String())
		}
	}
}

func TestMCPServeHTTPOffLoopbackWithoutATokenRefusesToStart(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		code, errOut := refusedToStart(t, "--workspace", t.TempDir(), "--http", addr)
		if code != exitUsage || !strings.Contains(errOut, "--http "+addr+" is not a loopback address: give a token (--token or MYELIN_TOKEN)") {
			t.Errorf("--http %s without a token: exit %d, want %d saying a token is needed: %s", addr, code, exitUsage, errOut)
		}
		if strings.Contains(errOut, "listening") {
			t.Errorf("--http %s without a token listened: %s", addr, errOut)
		}
	}
}

func TestMCPServeHTTPRefusesAWeakTokenFromTheFlagOrTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env, want string
	}{
		{"short flag", "short-token", "", "the token is 11 character(s) long"},
		{"short env", "", "short-token", "the token is 11 character(s) long"},
		{"spaces in env", "", "sixteen chars and more", "the token has white space at byte 8"},
		{"control character", "sixteen-chars-and\x01more", "", "a character that is not visible ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MYELIN_TOKEN", tc.env)
			args := []string{"--workspace", t.TempDir(), "--http", "0.0.0.0:0"}
			if tc.flag != "" {
				args = append(args, "--token", tc.flag)
			}
			code, errOut := refusedToStart(t, args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "at least 16 characters") {
				t.Fatalf("exit %d, want %d saying %q and the rule: %s", code, exitUsage, tc.want, errOut)
			}
			if tok := tc.flag + tc.env; strings.Contains(errOut, tok) {
				t.Errorf("the error shows the token: %s", errOut)
			}
		})
	}
}

func TestMCPServeHTTPWithoutATokenAnswersOnlyALoopbackHost(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	s := startGuardedMCP(t, t.TempDir())
	// DNS rebinding: a page of evil.example.com, its name resolved to
	// 127.0.0.1, is same-origin with itself
	for _, host := range []string{"evil.example.com", "evil.example.com:80", "127.0.0.1.nip.io"} {
		resp, body := s.post(t, initializeRequest, map[string]string{"Host": host, "Origin": "http://" + host})
		wantRefusal(t, "Host "+host, resp, body, http.StatusForbidden, "answers only requests for a loopback host", `not "`+host+`"`, "--token")
	}
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]:9"} {
		resp, body := s.post(t, initializeRequest, map[string]string{"Host": host})
		wantInitialized(t, "Host "+host, resp, body)
	}
}

func TestMCPServeHTTPRefusesACrossOriginBrowserRequest(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	s := startGuardedMCP(t, t.TempDir())
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example.com"},
		{"Origin": "null"},
		{"Origin": "http://localhost:1"}, // another port is another origin
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
	} {
		resp, body := s.post(t, initializeRequest, h)
		wantRefusal(t, "cross-origin "+strings.Join(mapPairs(h), " "), resp, body, http.StatusForbidden, "a request from another origin", "is refused: this server takes no cross-origin requests")
	}
	// a page the server served itself is of its own origin
	origin := strings.TrimSuffix(s.url, "/")
	resp, body := s.post(t, initializeRequest, map[string]string{"Origin": origin, "Sec-Fetch-Site": "same-origin"})
	wantInitialized(t, "Origin "+origin, resp, body)
}

func mapPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+": "+v)
	}
	return out
}

func TestMCPServeHTTPWithATokenNeedsItOnEveryRequest(t *testing.T) {
	const token = "0123456789abcdef-token"
	for _, from := range []string{"--token", "MYELIN_TOKEN"} {
		t.Run(from, func(t *testing.T) {
			var args []string
			if from == "--token" {
				t.Setenv("MYELIN_TOKEN", "")
				args = []string{"--token", token}
			} else {
				t.Setenv("MYELIN_TOKEN", token)
			}
			s := startGuardedMCP(t, t.TempDir(), args...)
			for _, auth := range []string{"", "Bearer wrong-token-of-some-length", "Bearer " + token + "x", "Basic " + token, token} {
				resp, body := s.post(t, initializeRequest, map[string]string{"Authorization": auth})
				wantRefusal(t, "Authorization "+strings.ReplaceAll(auth, token, "TOKEN"), resp, body, http.StatusUnauthorized, "this server needs its token: send the header Authorization: Bearer TOKEN")
				if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="myelin"` {
					t.Errorf("a 401 has WWW-Authenticate %q, want Bearer realm=\"myelin\"", got)
				}
			}
			// the token does not stand in for the origin check
			resp, body := s.post(t, initializeRequest, map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example.com"})
			wantRefusal(t, "cross-origin with the token", resp, body, http.StatusForbidden, "a request from another origin")
			for _, auth := range []string{"Bearer " + token, "bearer  " + token} {
				resp, body := s.post(t, initializeRequest, map[string]string{"Authorization": auth})
				wantInitialized(t, "with the token", resp, body)
			}
			// with a token, any name is served, as by myelin serve: a proxy
			// on the same machine that keeps the Host it was asked for
			resp, body = s.post(t, initializeRequest, map[string]string{"Authorization": "Bearer " + token, "Host": "myelin.example.com"})
			wantInitialized(t, "with the token, for another host name", resp, body)
			if strings.Contains(s.stderr.String(), token) {
				t.Errorf("stderr shows the token: %s", s.stderr.String())
			}
		})
	}
}

func TestMCPServeHTTPBoundsTheRequestBody(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	s := startGuardedMCP(t, t.TempDir())
	big := strings.Replace(initializeRequest, `"guard-test"`, `"`+strings.Repeat("x", 5<<20)+`"`, 1)
	resp, body := s.post(t, big, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds 4194304 bytes") {
		t.Fatalf("a 5 MiB initialize: %d %.200s, want 413 saying it exceeds 4194304 bytes", resp.StatusCode, body)
	}
}

// session initializes a session and returns its id.
func (s *guardedMCP) session(t *testing.T) string {
	t.Helper()
	resp, body := s.post(t, initializeRequest, nil)
	wantInitialized(t, "initialize", resp, body)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp, body = s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", resp.StatusCode, body)
	}
	return sid
}

func TestMCPServeHTTPStopsEndingItsStandingStreamsCleanly(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	s := startGuardedMCP(t, t.TempDir())
	sid := s.session(t)
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	if code := s.end(t); code != exitOK {
		t.Fatalf("mcp serve exited %d when stopped, want %d: %s", code, exitOK, s.stderr.String())
	}
	// the stream was ended by the server, not cut when its grace ran out
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("the GET stream was cut (%v), want it ended cleanly when the server stopped", err)
	}
}

func TestMCPServeHTTPLetsACallInFlightAnswerWhenStopped(t *testing.T) {
	t.Setenv("MYELIN_TOKEN", "")
	dir := t.TempDir()
	s := startGuardedMCP(t, dir, "--allow-shell", "--yes")
	sid := s.session(t)
	type answer struct {
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell--run","arguments":{"command":"touch started; while [ ! -e stopping ]; do sleep 0.05; done; echo finished"}}}`
		req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(call))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		answered <- answer{b.String(), sc.Err()}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("the call did not start (%v): %s", err, s.stderr.String())
		}
	}
	s.stop()
	// once the server stops listening, it is stopping: only then may the
	// call end, so that it is in flight through the stop
	addr := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("mcp serve still listens 30 s after it was told to stop: %s", s.stderr.String())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "stopping"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-answered
	if a.err != nil || !strings.Contains(a.body, `"id":2`) || !strings.Contains(a.body, `finished`) {
		t.Fatalf("the call in flight when the server stopped: %v %q, want its answer saying finished", a.err, a.body)
	}
	if code := s.end(t); code != exitOK {
		t.Fatalf("mcp serve exited %d, want %d: %s", code, exitOK, s.stderr.String())
	}
}
