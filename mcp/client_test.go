package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	// the servers' own dirs and the replies' text files, and the sweeps
	// of left ones, in a temp dir of the tests' own, not the real one
	tmp, err := os.MkdirTemp("", "mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := skipped.Main(m)
	os.RemoveAll(tmp)
	os.Exit(code)
}

// testServer is the config entry that starts this test binary as the
// stdio test server.
func testServer(name string) Server {
	cmd, env := mcptest.Command()
	return Server{Name: name, Type: "stdio", Command: cmd, Env: env}
}

// harness is a started Set with a workspace and a dispatcher over its tools.
type harness struct {
	t   *testing.T
	set *Set
	ws  *workspace.Workspace
	d   *tool.Dispatcher
}

func start(t *testing.T, servers []Server, o Options) *harness {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ws, err := workspace.Open(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	set := Start(context.Background(), servers, o)
	t.Cleanup(func() {
		set.Close()
		ws.Close()
	})
	reg := &tool.Registry{}
	if err := reg.Add(set.Tools()...); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, set: set, ws: ws, d: &tool.Dispatcher{Tools: reg, Env: result.Env{Store: ws}}}
}

var callN int

func (h *harness) call(name, input string) result.Output {
	h.t.Helper()
	callN++
	return h.d.Call(context.Background(), tool.Call{ID: fmt.Sprintf("call_%d", callN), Name: name, Input: json.RawMessage(input)})
}

func (h *harness) file(path string) []byte {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.ws.Dir(), path))
	if err != nil {
		h.t.Fatal(err)
	}
	return data
}

func TestStdioToolsAreOfferedUnderTheirServerNamesInOrder(t *testing.T) {
	h := start(t, []Server{testServer("zeta"), testServer("alpha")}, Options{})
	var names []string
	for _, tl := range h.set.Tools() {
		if strings.HasSuffix(tl.Name, "--echo") {
			names = append(names, tl.Name)
			if tl.Description != "Returns its text." {
				t.Errorf("%s: description %q, want the server's", tl.Name, tl.Description)
			}
			if tl.InputSchema == nil || tl.InputSchema.Properties["text"] == nil {
				t.Errorf("%s: input schema %+v lacks the server's text property", tl.Name, tl.InputSchema)
			}
		}
	}
	if strings.Join(names, " ") != "alpha--echo zeta--echo" {
		t.Errorf("echo tools %v, want alpha--echo zeta--echo", names)
	}
	st := h.set.Status()
	if len(st) != 2 {
		t.Fatalf("status of %d servers, want 2: %+v", len(st), st)
	}
	if st[0].Name != "zeta" {
		t.Errorf("the first status is %s's, want zeta's (the config's order)", st[0].Name)
	}
	if st[0].State != StateRunning {
		t.Errorf("zeta is %s, want %s", st[0].State, StateRunning)
	}
	if len(st[0].Tools) < 10 {
		t.Errorf("zeta offers %d tools, want the test server's 10 or more: %v", len(st[0].Tools), st[0].Tools)
	}
}

func TestTextReachesTheModelVerbatim(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	text := "a \"quoted\" line\n\tand <html> & ünïcode 🎉\n{\"json\": true}"
	in, _ := json.Marshal(map[string]string{"text": text})
	out := h.call("t--echo", string(in))
	if out.IsError || out.Text != text {
		t.Errorf("got %q (error %v), want %q", out.Text, out.IsError, text)
	}
}

func TestEveryContentTypeReadsAsSPEC4Says(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	out := h.call("t--every", `{}`)
	if out.IsError {
		t.Fatalf("error: %s", out.Text)
	}
	for _, want := range []string{
		"every type:\n",
		fmt.Sprintf("[image: image/png, %d bytes]", len(mcptest.PNG)),
		`[resource link "readme": file:///docs/readme.md; not fetched]`,
		"[resource file:///notes.txt, text/plain]\nthe notes",
	} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, out.Text)
		}
	}
	if len(out.Images) != 1 || string(out.Images[0].Data) != string(mcptest.PNG) {
		t.Errorf("images %+v, want the PNG natively", out.Images)
	}
	if len(out.Files) != 2 {
		t.Fatalf("saved files %v, want the audio and the blob", out.Files)
	}
	for i, want := range [][]byte{mcptest.WAV, mcptest.Blob} {
		if got := h.file(out.Files[i]); string(got) != string(want) {
			t.Errorf("file %s holds %q, want %q", out.Files[i], got, want)
		}
		if !strings.Contains(out.Text, "saved to workspace file "+out.Files[i]+"]") {
			t.Errorf("text does not name %s:\n%s", out.Files[i], out.Text)
		}
	}
	if !strings.Contains(out.Text, "[audio: audio/wav, ") {
		t.Errorf("no audio stub:\n%s", out.Text)
	}
}

func TestStructuredContent(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	only := h.call("t--structured", `{}`)
	if only.Text != `{"count":2,"items":["a","b"]}` {
		t.Errorf("structured only: the model reads %q, want its JSON", only.Text)
	}
	var v map[string]any
	if err := json.Unmarshal(only.Structured, &v); err != nil || v["count"] != 2.0 {
		t.Errorf("structured kept as %s (%v)", only.Structured, err)
	}
	both := h.call("t--structured_text", `{}`)
	if both.Text != "two items" || string(both.Structured) != `{"count":2}` {
		t.Errorf("structured with text: text %q structured %s, want the server's text and the JSON kept", both.Text, both.Structured)
	}
}

func TestIsErrorIsAnErrorResultWithTheServersText(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	out := h.call("t--fail", `{}`)
	if !out.IsError || out.Text != "it went wrong: no such thing" {
		t.Errorf("got %q error=%v", out.Text, out.IsError)
	}
}

func TestRawResultsTheSDKWouldRefuse(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	for _, tc := range []struct{ name, raw, want string }{
		{"unknown block type", `{"content":[{"type":"text","text":"before"},{"type":"hologram","data":{"z":1}}]}`, `before` + "\n" + `{"type":"hologram","data":{"z":1}}`},
		{"lone surrogate", `{"content":[{"type":"text","text":"a\ud800b"}]}`, "a\uFFFDb"},
		{"surrogate pair", `{"content":[{"type":"text","text":"\ud83c\udf89"}]}`, "🎉"},
		{"lone surrogate in structured content", `{"content":[],"structuredContent":{"s":"a\ud800"}}`, `{"s":"a\ufffd"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"json": tc.raw})
			out := h.call("t--raw", string(in))
			if out.IsError || out.Text != tc.want {
				t.Errorf("got %q (error %v), want %q", out.Text, out.IsError, tc.want)
			}
		})
	}
}

func TestA20MiBTextIsReadAndSpilledWhole(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	out := h.call("t--big", `{"mib":20}`)
	if out.IsError || out.SpillPath == "" {
		t.Fatalf("error %v, spill %q: %.200s", out.IsError, out.SpillPath, out.Text)
	}
	line := strings.Repeat("x", 63) + "\n"
	want := strings.Repeat(line, 20<<20/len(line))
	if got := h.file(out.SpillPath); string(got) != want {
		t.Errorf("spill file holds %d bytes, want the %d sent", len(got), len(want))
	}
	if !strings.Contains(out.Text, "workspace--read") {
		t.Errorf("no ready call in %q", out.Text[len(out.Text)-300:])
	}
}

func TestAReplyOverTheBoundIsAnErrorAndTheSessionGoesOn(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{MaxReply: 1 << 20})
	out := h.call("t--big", `{"mib":2}`)
	if !out.IsError {
		t.Errorf("a reply over the bound is not an error: %.300q", out.Text)
	}
	for _, want := range []string{"reply too large", "over the bound of 1.0 MiB"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("got %.300q, want it to say %q", out.Text, want)
		}
	}
	if out := h.call("t--echo", `{"text":"still here"}`); out.Text != "still here" {
		t.Errorf("after the large reply: %q", out.Text)
	}
}

func TestACallOverItsTimeoutIsAnErrorAndTheServerAnswersTheNext(t *testing.T) {
	s := testServer("t")
	s.TimeoutMS = 200
	h := start(t, []Server{s}, Options{})
	out := h.call("t--slow", `{"ms":10000}`)
	if !out.IsError || !strings.Contains(out.Text, "no answer within 200ms") {
		t.Errorf("got %q (error %v)", out.Text, out.IsError)
	}
	if out := h.call("t--slow", `{"ms":1}`); out.Text != "done" {
		t.Errorf("the next call: %q", out.Text)
	}
}

// A JSON-RPC error reply is the server's answer: the call returns it at
// once, without waiting to see whether the server died. With a grace of
// 10 s, a wait (twice the grace) would outlast the 5 s deadline.
func TestAnErrorReplyIsReturnedAtOnce(t *testing.T) {
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			s := testServer("t")
			if name == "http" {
				srv := httptest.NewServer(mcptest.Handler(false))
				t.Cleanup(srv.Close)
				s = Server{Name: "t", Type: "http", URL: srv.URL}
			}
			h := start(t, []Server{s}, Options{Grace: 10 * time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// A tool the server does not have: its SDK answers with an error.
			if err := h.d.Tools.Add(h.set.servers[0].tool("t--no_such_tool", &sdk.Tool{Name: "no_such_tool", InputSchema: map[string]any{"type": "object"}})); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				out := h.d.Call(ctx, tool.Call{ID: fmt.Sprintf("err_%d", i), Name: "t--no_such_tool", Input: json.RawMessage(`{}`)})
				if ctx.Err() != nil {
					t.Fatalf("call %d: the error reply was returned only after the deadline (%v): %q", i, ctx.Err(), out.Text)
				}
				if !out.IsError {
					t.Errorf("call %d: got %q, not an error; want the server's error", i, out.Text)
				}
				if !strings.Contains(out.Text, "no_such_tool") {
					t.Errorf("call %d: got %q, want the server's error naming the tool", i, out.Text)
				}
				if strings.Contains(out.Text, "during the call") {
					t.Errorf("call %d: got %q, which takes the error reply for the server's end", i, out.Text)
				}
			}
			if st := h.set.Status()[0]; st.State != StateRunning {
				t.Errorf("state after error replies %q, want running", st.State)
			}
		})
	}
}

func TestAServerThatDiesMidCallIsRestartedOnTheNextCall(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	pid1 := h.call("t--pid", `{}`).Text
	out := h.call("t--crash", `{}`)
	if !out.IsError || !strings.Contains(out.Text, "the server exited (exit status 3) during the call") {
		t.Errorf("the crashing call: %q (error %v), want an error saying the server exited", out.Text, out.IsError)
	}
	if st := h.set.Status()[0]; st.State != StateExited {
		t.Errorf("state after the crash %q, want exited", st.State)
	}
	pid2 := h.call("t--pid", `{}`)
	if pid2.IsError || pid2.Text == pid1 {
		t.Errorf("after the crash: %q (error %v), want a new server's pid, not %s", pid2.Text, pid2.IsError, pid1)
	}
	if st := h.set.Status()[0]; st.State != StateRunning {
		t.Errorf("state after the restart %q, want running", st.State)
	}
	log := string(h.file(".myelin/logs/mcp-t.log"))
	if !strings.Contains(log, "mcptest: crashing as asked") || strings.Count(log, "--- myelin started") != 2 ||
		!strings.Contains(log, "skipped a line on the server's stdout that is not JSON-RPC") || !strings.Contains(log, "[INFO] and a log line in brackets") {
		t.Errorf("log:\n%s", log)
	}
}

func TestAServerGetsOnlyItsOwnEnvironmentAndPathAndHome(t *testing.T) {
	t.Setenv("MYELIN_TEST_SECRET", "do not pass")
	s := testServer("t")
	s.Env["GREETING"] = "hello"
	h := start(t, []Server{s}, Options{})
	var names []string
	for _, kv := range strings.Split(h.call("t--env", `{}`).Text, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	if got := strings.Join(names, " "); got != "GREETING HOME MYELIN_MCPTEST_SERVE PATH" {
		t.Errorf("the server's environment has %s", got)
	}
}

func TestInputIsValidatedAgainstTheServersSchema(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	out := h.call("t--echo", `{"text":5}`)
	if !out.IsError || !strings.Contains(out.Text, "text") {
		t.Errorf("got %q (error %v), want an error naming the field", out.Text, out.IsError)
	}
}

func TestAServerThatFailsToStartIsReportedAndTheOthersWork(t *testing.T) {
	h := start(t, []Server{
		testServer("good"),
		{Name: "gone", Type: "stdio", Command: "/nonexistent/server"},
		{Name: "dies", Type: "stdio", Command: "sh", Args: []string{"-c", "echo 'cannot find the database' >&2; exit 4"}},
	}, Options{})
	fails := h.set.Failures()
	if len(fails) != 2 {
		t.Fatalf("failures %v, want two", fails)
	}
	joined := fmt.Sprint(fails)
	for _, want := range []string{"MCP server gone did not start", "/nonexistent/server", "MCP server dies did not start", "exit status 4", "cannot find the database"} {
		if !strings.Contains(joined, want) {
			t.Errorf("failures lack %q: %s", want, joined)
		}
	}
	for _, tl := range h.set.Tools() {
		if !strings.HasPrefix(tl.Name, "good--") {
			t.Errorf("tool %s offered from a failed server", tl.Name)
		}
	}
	if out := h.call("good--echo", `{"text":"ok"}`); out.Text != "ok" {
		t.Errorf("the good server: %q", out.Text)
	}
}

func TestCloseKillsAServerThatIgnoresItsStdinAndSIGTERM(t *testing.T) {
	dir := t.TempDir()
	o := &Options{Dir: dir, Grace: 50e6}
	p, err := startProcess(Server{Name: "stubborn", Command: "sh", Args: []string{"-c", `trap "" TERM; while :; do sleep 1; done`}}, o)
	if err != nil {
		t.Fatal(err)
	}
	p.stop(o.grace())
	if !strings.Contains(p.exited(), "killed") {
		t.Errorf("the process ended with %q, want killed", p.exited())
	}
}

func TestHTTPServersWithHeaders(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("jsonResponse=%v", jsonResponse), func(t *testing.T) {
			inner := mcptest.Handler(jsonResponse)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer sesame" {
					http.Error(w, "no key", http.StatusUnauthorized)
					return
				}
				inner.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
			s := Server{Name: "web", Type: "http", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer sesame"}}
			h := start(t, []Server{s}, Options{MaxReply: 1 << 20})
			if f := h.set.Failures(); f != nil {
				t.Fatal(f)
			}
			if out := h.call("web--echo", `{"text":"over http"}`); out.Text != "over http" {
				t.Errorf("echo: %q", out.Text)
			}
			if out := h.call("web--every", `{}`); len(out.Images) != 1 || len(out.Files) != 2 {
				t.Errorf("every: %q", out.Text)
			}
			if out := h.call("web--structured", `{}`); out.Text != `{"count":2,"items":["a","b"]}` {
				t.Errorf("structured: %q", out.Text)
			}
			out := h.call("web--big", `{"mib":2}`)
			if !out.IsError || !strings.Contains(out.Text, "reply too large") {
				t.Errorf("big: %.300q (error %v)", out.Text, out.IsError)
			}
			if out := h.call("web--echo", `{"text":"still"}`); out.Text != "still" {
				t.Errorf("after big: %q", out.Text)
			}
		})
	}
}

func TestAnHTTPServerWithoutItsKeyFailsToStart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no key", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
	h := start(t, []Server{{Name: "web", Type: "http", URL: srv.URL}}, Options{})
	if f := h.set.Failures(); len(f) != 1 || !regexp.MustCompile(`web did not start.*401|Unauthorized`).MatchString(f[0].Error()) {
		t.Errorf("failures %v", f)
	}
}

func TestCallsAfterACrashShareOneRestart(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{})
	h.call("t--crash", `{}`)
	outs := h.d.Round(context.Background(), []tool.Call{
		{ID: "a", Name: "t--pid", Input: json.RawMessage(`{}`)},
		{ID: "b", Name: "t--pid", Input: json.RawMessage(`{}`)},
		{ID: "c", Name: "t--pid", Input: json.RawMessage(`{}`)},
	})
	for _, o := range outs {
		if o.IsError || o.Text != outs[0].Text {
			t.Errorf("pids %q %q %q, want one restarted server", outs[0].Text, outs[1].Text, outs[2].Text)
			break
		}
	}
}

func TestARestartThatFailsIsAnErrorAndIsTriedAgainOnTheNextCall(t *testing.T) {
	exe, env := mcptest.Command()
	script := filepath.Join(t.TempDir(), "server.sh")
	body := []byte("#!/bin/sh\nexec " + exe + "\n")
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	h := start(t, []Server{{Name: "t", Type: "stdio", Command: script, Env: env}}, Options{})
	h.call("t--crash", `{}`)
	os.Remove(script)
	out := h.call("t--echo", `{"text":"x"}`)
	if !out.IsError || !strings.Contains(out.Text, "the server exited (exit status 3), and restarting it failed: ") {
		t.Errorf("with the server gone: %q (error %v)", out.Text, out.IsError)
	}
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := h.call("t--echo", `{"text":"back"}`); out.Text != "back" {
		t.Errorf("with the server back: %q", out.Text)
	}
}

// An HTTP server that restarts forgets its sessions: the call that finds
// its session gone is an error, and the next call starts a new session.
func TestAnHTTPServerThatRestartedGetsANewSessionOnTheNextCall(t *testing.T) {
	var mu sync.Mutex
	inner := mcptest.Handler(false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := inner
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the Set closes (cleanups run last first): its standalone stream is open until then
	h := start(t, []Server{{Name: "web", Type: "http", URL: srv.URL}}, Options{})
	if out := h.call("web--echo", `{"text":"one"}`); out.Text != "one" {
		t.Fatalf("first call: %q", out.Text)
	}
	mu.Lock()
	inner = mcptest.Handler(false) // the restart: no sessions
	mu.Unlock()
	first := h.call("web--echo", `{"text":"two"}`)
	if first.Text == "two" {
		t.Log("the SDK started a new session itself")
		return
	}
	if !first.IsError || !strings.Contains(first.Text, "session not found during the call, which may have run in part; a new session is started on the next call") {
		t.Fatalf("after the restart: %q", first.Text)
	}
	if out := h.call("web--echo", `{"text":"three"}`); out.Text != "three" {
		t.Errorf("the call after: %q (error %v); the one before said %q", out.Text, out.IsError, first.Text)
	}
}

// A reply whose "result" is null is not a tool result: it is an error
// saying so, not an empty success.
func TestANullResultIsAnError(t *testing.T) {
	h := start(t, []Server{testServer("t")}, Options{Grace: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := h.d.Call(ctx, tool.Call{ID: "null_1", Name: "t--raw", Input: json.RawMessage(`{"json":"null"}`)})
	if !out.IsError || !strings.Contains(out.Text, `"result": null`) || ctx.Err() != nil {
		t.Errorf("got %q (error %v, %v), want an error saying the result was null", out.Text, out.IsError, ctx.Err())
	}
	if out := h.call("t--echo", `{"text":"still here"}`); out.Text != "still here" {
		t.Errorf("the next call: %q", out.Text)
	}
}

// A server that never answers a request at start is reported as such:
// which request, and for how long; not as an exit myelin caused by
// closing it.
func TestAServerThatNeverAnswersSaysWhichRequestWentUnanswered(t *testing.T) {
	silent := Server{Name: "silent", Type: "stdio", Command: "sh", Args: []string{"-c", "cat >/dev/null"}}
	noList := testServer("nolist")
	noList.Env[mcptest.EnvIgnoreToolsList] = "1"
	// long enough for the test server to start and answer initialize on
	// a loaded machine, so that what goes unanswered is tools/list
	h := start(t, []Server{silent, noList}, Options{StartTimeout: 2 * time.Second, Grace: 100 * time.Millisecond})
	for i, want := range []string{"no answer to initialize within 2s", "no answer to tools/list within 2s"} {
		st := h.set.Status()[i]
		if st.State != StateFailed {
			t.Errorf("%s is %s, want %s", st.Name, st.State, StateFailed)
		}
		if !strings.Contains(st.Err, want) {
			t.Errorf("%s: %q, want it to say %q", st.Name, st.Err, want)
		}
		for _, not := range []string{"exit status", "context deadline exceeded"} {
			if strings.Contains(st.Err, not) {
				t.Errorf("%s: %q, which says %q: the server was stopped, not ended", st.Name, st.Err, not)
			}
		}
	}
}

// Issue 10, low: a server's log grew without bound (100 MB from one call).
// A server that writes 25 MiB to stderr leaves at most logMax in its log
// and logMax in the one rotated to .1.
func TestAServerLogIsCappedAndRotatedOnce(t *testing.T) {
	s := testServer("t")
	cmd := s.Command
	s.Command, s.Args = "sh", []string{"-c", `yes "spam spam spam" | head -c 26214400 >&2; exec "$0"`, cmd}
	h := start(t, []Server{s}, Options{})
	if out := h.call("t--pid", `{}`); out.IsError {
		t.Fatalf("the server did not serve: %s", out.Text)
	}
	h.set.Close()
	logs := filepath.Join(h.ws.Dir(), ".myelin", "logs")
	entries, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		st, err := os.Stat(filepath.Join(logs, e.Name()))
		if err != nil || st.Size() > logMax {
			t.Errorf("%s: %v bytes, over the cap %d (%v)", e.Name(), st.Size(), logMax, err)
		}
	}
	if strings.Join(names, " ") != "mcp-t.log mcp-t.log.1" {
		t.Fatalf("the logs directory holds %q, want the log and its .1", names)
	}
	if log := string(h.file(".myelin/logs/mcp-t.log")); !strings.Contains(log, "mcptest: serving on stdio") {
		t.Errorf("the log lost the server's last lines: ...%q", log[max(0, len(log)-200):])
	}
}

// Issue 10 §2: the log was opened by plain path, so a link planted at
// .myelin/logs/mcp-<server>.log made the server's stderr go where it led.
// The server runs without a log instead.
func TestAServerLogThatIsALinkIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".myelin", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, ".myelin", "logs", "mcp-t.log")); err != nil {
		t.Fatal(err)
	}
	h := start(t, []Server{testServer("t")}, Options{Dir: dir})
	if out := h.call("t--pid", `{}`); out.IsError {
		t.Fatalf("the server did not serve: %s", out.Text)
	}
	h.set.Close()
	if b, _ := os.ReadFile(outside); string(b) != "mine\n" {
		t.Fatalf("the file the link leads to was written: %q", b)
	}
}

// A server that exits before it answers, with its log a link: the failure
// says the log was not kept and why, rather than reading through the link.
func TestAServerWithALinkedLogThatExitsSaysItsStderrWasNotKept(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".myelin", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".myelin", "logs", "mcp-t.log")
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere.log"), link); err != nil {
		t.Fatal(err)
	}
	s := Server{Name: "t", Type: "stdio", Command: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}}
	h := start(t, []Server{s}, Options{Dir: dir})
	st := h.set.Status()[0]
	want := "the server exited (exit status 3) before it answered; its stderr was not kept (no log: " + link + " is a symbolic link"
	if st.State != StateFailed || !strings.Contains(st.Err, want) {
		t.Fatalf("status %s %q; want failed, saying %q", st.State, st.Err, want)
	}
}
