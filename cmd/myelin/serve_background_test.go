package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// served is a `myelin serve` process of the built binary, and its address.
type served struct {
	cmd    *exec.Cmd
	base   string
	stderr *lockedBuffer
}

// startServed starts the built binary's serve on a free loopback port with
// args added, and waits until it listens.
func startServed(t *testing.T, bin, dir string, args ...string) *served {
	t.Helper()
	s := &served{stderr: &lockedBuffer{}}
	s.cmd = exec.Command(bin, append([]string{"serve", "--workspace", dir, "--addr", "127.0.0.1:0"}, args...)...)
	s.cmd.Env = os.Environ()
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	waitFor(t, "serve to listen", func() bool {
		m := listening.FindStringSubmatch(s.stderr.String())
		if m != nil {
			s.base = m[1]
		}
		return m != nil
	}, s.stderr)
	return s
}

// post sends body to path and decodes the answer, which must be a 2xx.
func (s *served) post(t *testing.T, path, body string) map[string]any {
	t.Helper()
	return postJSON(t, s.base+path, body)
}

// stop interrupts serve and waits for it to exit cleanly.
func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGINT)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v; stderr: %s", err, s.stderr.String())
	}
}

// sseEvent is one event of a stream, as a test reads it.
type sseEvent struct {
	typ  string
	data map[string]any
}

// events follows conversation id's stream from its start in the
// background; the returned func gives the events read so far.
func (s *served) events(t *testing.T, id string) func() []sseEvent {
	t.Helper()
	resp, err := http.Get(s.base + "/v1/conversations/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var mu sync.Mutex
	var evs []sseEvent
	go func() {
		r := bufio.NewReader(resp.Body)
		var typ string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				typ = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var data map[string]any
				json.Unmarshal([]byte(v), &data)
				mu.Lock()
				evs = append(evs, sseEvent{typ, data})
				mu.Unlock()
			}
		}
	}()
	return func() []sseEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]sseEvent(nil), evs...)
	}
}

func count(evs []sseEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.typ == typ {
			n++
		}
	}
	return n
}

// Issue 17 §1 in serve, end to end through the built binary: a background
// script wakes the agent twice and then dies — each wake a wake event on
// the conversation's stream, then its turn, stored like any other — and
// its death after waking is silent. A script left running when serve stops
// is told as gone, once, at the conversation's next turn in the next serve.
func TestServeRunsAWokenTurnPerWakeAndTellsOfScriptsARestartTookAway(t *testing.T) {
	bin := buildMyelin(t)
	dir := workspaceWith(t, nil)
	code := "await wake_agent('first: the build started');\nawait sleep(20);\nawait wake_agent({step: 2});\nawait sleep(20);\nthrow new Error('the build broke')"
	srv := fakeAnthropic(t,
		toolCallStep("toolu_1", "code_execution", map[string]any{"background": true, "code": code}),
		providertest.Step{Text: "watching"},
		providertest.Step{Text: "woken once"},
		providertest.Step{Text: "woken twice"})
	s := startServed(t, bin, dir, "--wake-gap", "0s", "--allow", "code_execution")
	id := s.post(t, "/v1/conversations", "")["id"].(string)
	evs := s.events(t, id)
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"watch the build"}`)
	waitFor(t, "two woken turns", func() bool { return count(evs(), "turn.finished") == 3 }, s.stderr)

	var wakes []map[string]any
	var prompts []string
	for _, e := range evs() {
		switch e.typ {
		case "wake":
			wakes = append(wakes, e.data)
		case "turn.started":
			prompts = append(prompts, e.data["prompt"].(string))
		}
	}
	if len(wakes) != 2 || wakes[0]["n"] != 1.0 || wakes[1]["n"] != 2.0 || wakes[0]["line"] != 1.0 || !strings.Contains(wakes[1]["message"].(string), `{"step":2}`) {
		t.Fatalf("wake events %v", wakes)
	}
	if len(prompts) != 3 || prompts[1] != wakes[0]["message"] || prompts[2] != wakes[1]["message"] {
		t.Fatalf("the turns' prompts %q", prompts)
	}
	script := wakes[0]["script"].(string)
	for i, want := range []string{"first: the build started", `{"step":2}`} {
		text := lastUserText(t, srv, 2+i)
		if !strings.HasPrefix(text, "[myelin: background script "+script+" woke you with wake_agent") || !strings.HasSuffix(text, want) {
			t.Errorf("woken turn %d's prompt:\n%s", i+1, text)
		}
	}
	resp, err := http.Get(s.base + "/v1/conversations/" + id + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	var stored struct{ Total int }
	json.NewDecoder(resp.Body).Decode(&stored)
	resp.Body.Close()
	if stored.Total != 8 { // the turn's 4, then a prompt and an answer per wake
		t.Errorf("%d messages stored, want 8", stored.Total)
	}

	// a script still running when serve stops is gone in the next one
	srv.Push(toolCallStep("toolu_2", "code_execution", map[string]any{"background": true, "code": "await sleep(1e9)"}),
		providertest.Step{Text: "keeps watching"}, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok again"})
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"watch forever"}`)
	waitFor(t, "the turn", func() bool { return count(evs(), "turn.finished") == 4 }, s.stderr)
	gone := regexp.MustCompile(`bg_[0-9a-f]{8}`).FindString(lastUserText(t, srv, 5))
	s.stop(t)
	if n := len(srv.Requests()); n != 6 {
		t.Fatalf("%d requests: a death after wakes is silent, so 6 were wanted", n)
	}

	s = startServed(t, bin, dir, "--wake-gap", "0s", "--allow", "code_execution")
	evs = s.events(t, id)
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"hello"}`)
	waitFor(t, "the turn after the restart", func() bool { return count(evs(), "turn.finished") == 1 }, s.stderr)
	told := lastUserText(t, srv, 6)
	if gone == "" || !strings.HasPrefix(told, "[myelin: background script "+gone+", started ") || !strings.Contains(told, "it is gone and will not wake you") || !strings.HasSuffix(told, "]\n\nhello") {
		t.Errorf("the prompt after the restart:\n%s", told)
	}
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"and now?"}`)
	waitFor(t, "the next turn", func() bool { return count(evs(), "turn.finished") == 2 }, s.stderr)
	if again := lastUserText(t, srv, 7); again != "and now?" {
		t.Errorf("told twice: %q", again)
	}
	s.stop(t)
}
