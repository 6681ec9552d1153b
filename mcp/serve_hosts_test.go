package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hosts, the HTTP server and the watch of resident sets of
// TestMCPServePagesABigSpilledOutputToEachHostInBoundedMemory.

// stdioServer is the command line that starts serve over stdio and writes
// its process id to pidFile first (the shell execs it: the id stays), for
// its resident set to be watched.
func stdioServer(serve []string, pidFile string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ >"$0" && exec "$@"`, pidFile}, serve...)
}

// myelinHost is myelin's own MCP client as a host: a `myelin tool call`
// process a call, whose --mcp-config names the served myelin as the
// server "myelin" (its tools are myelin--workspace--read and so on:
// ToolNames), started over stdio by each call or reached over HTTP.
type myelinHost struct {
	bin, dir, config string
	pidFile          string // stdio: where each call's server writes its id
	host, server     int64  // the peak resident sets seen
}

func newMyelinHost(t *testing.T, bin string, serve []string, srv *httpServer) *myelinHost {
	t.Helper()
	h := &myelinHost{bin: bin, dir: t.TempDir()}
	entry := map[string]any{}
	if srv != nil {
		entry["url"] = srv.url
	} else {
		h.pidFile = filepath.Join(t.TempDir(), "server.pid")
		cmd := stdioServer(serve, h.pidFile)
		entry["command"], entry["args"] = cmd[0], cmd[1:]
	}
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"myelin": entry}})
	if err != nil {
		t.Fatal(err)
	}
	h.config = filepath.Join(h.dir, "served.json")
	if err := os.WriteFile(h.config, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *myelinHost) call(t *testing.T, name string, args any) e2eResult {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eCallBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, "tool", "call", "myelin--"+name, string(raw), "--mcp-config", h.config, "--workspace", h.dir, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if h.pidFile != "" {
		os.Remove(h.pidFile)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hw := watchRSS(pidOf(cmd.Process.Pid))
	var sw *rssWatch
	if h.pidFile != "" {
		sw = watchRSS(pidIn(h.pidFile))
	}
	err = cmd.Wait()
	h.host = max(h.host, hw.stop())
	if sw != nil {
		h.server = max(h.server, sw.wait(t, 10*time.Second))
	}
	var out struct {
		Text       string          `json:"text"`
		IsError    bool            `json:"is_error"`
		Structured json.RawMessage `json:"structured"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
		t.Fatalf("myelin tool call myelin--%s %s: %v (%v)\nstdout %.500s\nstderr %s\nthe server's log:\n%s", name, raw, err, jerr, stdout.String(), stderr.String(), h.serverLog())
	}
	return e2eResult{Text: out.Text, IsError: out.IsError, Structured: out.Structured}
}

// serverLog is the end of the stdio server's log in the host's workspace.
func (h *myelinHost) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, ".myelin", "logs", "mcp-myelin.log"))
	return tail(string(b), 2000)
}

func (h *myelinHost) finish(*testing.T) (host, server int64) { return h.host, h.server }

// nodeHost is the Node SDK's client as a host (testdata/serve/client.mjs),
// one session for every call: it starts the server over stdio, or
// connects to it over streamable HTTP.
type nodeHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
	hw, sw *rssWatch
}

func newNodeHost(t *testing.T, node, sdkDir, script string, serve []string, srv *httpServer) *nodeHost {
	t.Helper()
	args := []string{script, "http", ""}
	var pidFile string
	if srv != nil {
		args[2] = srv.url
	} else {
		pidFile = filepath.Join(t.TempDir(), "server.pid")
		args = append([]string{script, "stdio"}, stdioServer(serve, pidFile)...)
	}
	h := &nodeHost{cmd: exec.Command(node, args...), lines: make(chan []byte), stderr: &lockedBuffer{}}
	h.cmd.Env = append(os.Environ(), "MCP_SDK="+sdkDir)
	h.cmd.Stderr = h.stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cmd.Process.Kill(); go h.cmd.Wait() }) // when the test failed before finish; reaped, not left a zombie
	h.hw = watchRSS(pidOf(h.cmd.Process.Pid))
	if pidFile != "" {
		h.sw = watchRSS(pidIn(pidFile))
	}
	go func() {
		defer close(h.lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			h.lines <- line
		}
	}()
	var listed struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(h.next(t, "the tool list"), &listed); err != nil {
		t.Fatalf("the tool list: %v", err)
	}
	schemas := map[string]bool{}
	for _, tl := range listed.Tools {
		schemas[tl.Name] = string(tl.OutputSchema) != "null"
	}
	// The names are myelin's own; the workspace tools tell the host their
	// output schemas, which it checks each result against.
	for name, want := range map[string]bool{"shell--run": false, "workspace--read": true, "workspace--grep": true} {
		if got, ok := schemas[name]; !ok || got != want {
			t.Fatalf("the host lists %s: %v, with an output schema: %v; want listed, with one: %v (tools: %v)", name, ok, got, want, schemas)
		}
	}
	return h
}

// next is the host's next line of output.
func (h *nodeHost) next(t *testing.T, what string) []byte {
	t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			t.Fatalf("the Node host ended before %s: %v\nits stderr:\n%s", what, h.cmd.Wait(), tail(h.stderr.String(), 3000))
		}
		return line
	case <-time.After(e2eCallBound):
		t.Fatalf("the Node host gave no %s within %v\nits stderr:\n%s", what, e2eCallBound, tail(h.stderr.String(), 3000))
	}
	return nil
}

func (h *nodeHost) call(t *testing.T, name string, args any) e2eResult {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.in.Write(append(raw, '\n')); err != nil {
		t.Fatalf("writing to the Node host: %v", err)
	}
	var reply struct {
		Error  string `json:"error"`
		Result struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(h.next(t, "the result of "+string(raw)), &reply); err != nil {
		t.Fatalf("the result of %s: %v", raw, err)
	}
	if reply.Error != "" {
		t.Fatalf("the Node SDK's client failed the call %s: %s", raw, reply.Error)
	}
	var texts []string
	for _, c := range reply.Result.Content {
		if c.Type != "text" {
			t.Errorf("%s gave a %s block; myelin's results are text", raw, c.Type)
		}
		texts = append(texts, c.Text)
	}
	return e2eResult{Text: strings.Join(texts, "\n"), IsError: reply.Result.IsError, Structured: reply.Result.StructuredContent}
}

func (h *nodeHost) finish(t *testing.T) (host, server int64) {
	t.Helper()
	h.in.Close() // the host closes its session and exits
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the Node host: %v\n%s", err, tail(h.stderr.String(), 3000))
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the Node host did not exit within 30 s of the end of its input")
		h.cmd.Process.Kill()
	}
	host = h.hw.stop()
	if h.sw != nil {
		server = h.sw.wait(t, 10*time.Second)
	}
	return host, server
}

// httpServer is `myelin mcp serve --http 127.0.0.1:0` started by the test.
type httpServer struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	w      *rssWatch
	rest   int64 // its peak resident set once listening, before any call
}

// startHTTPServer starts serve over HTTP on a free loopback port, read
// from the line it prints: `myelin mcp serve: listening on http://ADDR/`.
func startHTTPServer(t *testing.T, serve []string) *httpServer {
	t.Helper()
	s := &httpServer{cmd: exec.Command(serve[0], append(serve[1:], "--http", "127.0.0.1:0")...), stderr: &lockedBuffer{}}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); go s.cmd.Wait() }) // when the test failed before stop; reaped, not left a zombie
	s.w = watchRSS(pidOf(s.cmd.Process.Pid))
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.stderr, line)
			if addr, ok := strings.CutPrefix(line, "myelin mcp serve: listening on "); ok {
				listening <- addr
			}
		}
	}()
	select {
	case s.url = <-listening:
		s.rest, _ = readHWM(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	case <-time.After(time.Minute):
		t.Fatalf("myelin mcp serve --http said nowhere it listens within a minute; its stderr:\n%s", s.stderr.String())
	}
	return s
}

// stop interrupts the server, as a person would, and returns its peak
// resident set.
func (s *httpServer) stop(t *testing.T) int64 {
	t.Helper()
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("myelin mcp serve --http ended with %v; its stderr:\n%s", err, tail(s.stderr.String(), 3000))
		}
	case <-time.After(30 * time.Second):
		t.Errorf("myelin mcp serve --http did not stop within 30 s of an interrupt")
		s.cmd.Process.Kill()
	}
	return s.w.stop()
}

// rssWatch follows the peak resident set of one process: VmHWM in
// /proc/PID/status, the most it has held at once, read every 10 ms while
// the process lives. The last reading is within 10 ms of the process's
// end; its peak comes earlier, during a call.
type rssWatch struct {
	peak atomic.Int64 // bytes
	quit chan struct{}
	done chan struct{}
}

// watchRSS watches the process whose id pid gives; pid waits for it, and
// gives 0 when quit is closed first.
func watchRSS(pid func(quit <-chan struct{}) int) *rssWatch {
	w := &rssWatch{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		id := pid(w.quit)
		if id == 0 {
			return
		}
		status := fmt.Sprintf("/proc/%d/status", id)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			hwm, ok := readHWM(status)
			if !ok { // gone, or a zombie, which holds no memory
				return
			}
			w.peak.Store(max(w.peak.Load(), hwm))
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and returns the peak seen.
func (w *rssWatch) stop() int64 {
	close(w.quit)
	<-w.done
	return w.peak.Load()
}

// wait waits up to d for the process to end, then stops the watch.
func (w *rssWatch) wait(t *testing.T, d time.Duration) int64 {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(d):
		t.Errorf("the watched server process did not end within %v of its host", d)
	}
	return w.stop()
}

// readHWM reads VmHWM, in bytes, from a /proc/PID/status file.
func readHWM(status string) (int64, bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func pidOf(id int) func(<-chan struct{}) int { return func(<-chan struct{}) int { return id } }

// pidIn waits for a process id to be written to file.
func pidIn(file string) func(<-chan struct{}) int {
	return func(quit <-chan struct{}) int {
		for {
			if b, err := os.ReadFile(file); err == nil && bytes.HasSuffix(b, []byte("\n")) {
				if id, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					return id
				}
			}
			select {
			case <-quit:
				return 0
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// lockedBuffer is a buffer written by one goroutine and read by another.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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
