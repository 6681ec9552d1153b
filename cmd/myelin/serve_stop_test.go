package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
)

// servedProcess is a `myelin serve` process the test started, and where
// it listens.
type servedProcess struct {
	cmd    *exec.Cmd
	base   string
	stderr *lockedBuffer
}

// startServe starts the built myelin serving dir with args added.
func startServe(t *testing.T, dir string, args ...string) *servedProcess {
	t.Helper()
	cmd := exec.Command(buildMyelin(t), append([]string{"serve", "--workspace", dir, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = os.Environ()
	p := &servedProcess{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	waitFor(t, "serve to listen", func() bool { return listening.MatchString(p.stderr.String()) }, p.stderr)
	p.base = listening.FindStringSubmatch(p.stderr.String())[1]
	return p
}

// turnOn creates a conversation, starts a turn of prompt on it and opens
// its event stream; it returns the conversation's id and the stream.
func (p *servedProcess) turnOn(t *testing.T, prompt string) (string, *bufio.Reader) {
	t.Helper()
	id := postJSON(t, p.base+"/v1/conversations", "")["id"].(string)
	started := postJSON(t, p.base+"/v1/conversations/"+id+"/turns", `{"prompt":"`+prompt+`"}`)
	resp, err := http.Get(p.base + started["events"].(string))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return id, bufio.NewReader(resp.Body)
}

// finished reads an event stream to its turn.finished and returns its
// data and the types of the events before it.
func finished(t *testing.T, r *bufio.Reader) (fin map[string]any, types []string) {
	t.Helper()
	return readTo(t, r, "turn.finished")
}

// readTo reads an event stream to the first event of type want and
// returns its data and the types of the events up to it.
func readTo(t *testing.T, r *bufio.Reader, want string) (data map[string]any, types []string) {
	t.Helper()
	typ := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended (%v) before %s, after %v", err, want, types)
		}
		line = strings.TrimSuffix(line, "\n")
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
			types = append(types, v)
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && typ == want {
			if err := json.Unmarshal([]byte(v), &data); err != nil {
				t.Fatalf("%s's data %q: %v", want, v, err)
			}
			return data, types
		}
	}
}

// conversationMessages are the stored messages of conversation id of the
// workspace dir.
func conversationMessages(t *testing.T, dir, id string) []history.Message {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(dir, ".myelin", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// Issue 27 §7: serve ignored SIGTERM — the signal Docker, systemd and
// Kubernetes stop services with — and was killed in 71 ms, its watchers
// never told, its running turn left. On SIGTERM it refuses new turns
// (503) and lets the running one finish within --shutdown-grace: the turn
// ends as it would have, its watcher gets its turn.finished, and serve
// exits 0.
func TestServeOnSIGTERMRefusesNewTurnsAndLetsTheRunningOneFinish(t *testing.T) {
	dir := workspaceWith(t, nil)
	hold := make(chan struct{})
	srv := fakeAnthropic(t, providertest.Step{Text: "finished in the grace", Hold: hold})
	p := startServe(t, dir, "--shutdown-grace", "5m")
	id, events := p.turnOn(t, "hello")
	waitFor(t, "the turn's request", func() bool { return len(srv.Requests()) == 1 }, p.stderr)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "serve to say it stops", func() bool { return strings.Contains(p.stderr.String(), "stopping") }, p.stderr)
	other := postJSON(t, p.base+"/v1/conversations", "")["id"].(string)
	resp, err := http.Post(p.base+"/v1/conversations/"+other+"/turns", "application/json", strings.NewReader(`{"prompt":"too late"}`))
	if err != nil {
		t.Fatalf("a turn started while serve stops: %v (want a 503 answer)", err)
	}
	var refused apiErrorBody
	json.NewDecoder(resp.Body).Decode(&refused)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(refused.Error.Message, "stopping") {
		t.Fatalf("a turn started while serve stops: %d %q, want 503 saying the server is stopping", resp.StatusCode, refused.Error.Message)
	}

	close(hold)
	fin, types := finished(t, events)
	if fin["reason"] != "end_turn" || fin["text"] != "finished in the grace" {
		t.Fatalf("turn.finished %v after %v, want end_turn with the whole answer", fin, types)
	}
	if !strings.Contains(strings.Join(types, " "), "notice") {
		t.Fatalf("events %v: the watcher was not told the server stops (a notice)", types)
	}
	if code := exitCode(t, p.cmd); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
	}
	msgs := conversationMessages(t, dir, id)
	if len(msgs) != 2 || msgs[1].Cut || msgs[1].Parts[0].Text != "finished in the grace" {
		t.Fatalf("stored %+v, want the prompt and the whole answer", msgs)
	}
	if len(conversationMessages(t, dir, other)) != 0 {
		t.Fatalf("the refused turn's prompt was stored")
	}
}

// apiErrorBody is the body of the API's error answers.
type apiErrorBody struct {
	Error struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// At the end of the grace the turns still running are cancelled as a
// cancel does: an answer the model was still giving is stored as cut, a
// running tool call is answered, each watcher gets turn.finished
// (cancelled), and serve exits 0 — for SIGINT as for SIGTERM.
func TestServeCancelsTheTurnsStillRunningAtTheGracesEndStoringWhatTheyDid(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := workspaceWith(t, nil)
			hold := make(chan struct{})
			defer close(hold)
			srv := fakeAnthropic(t,
				providertest.Step{Text: "never sent", Hold: hold},
				providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "shell--run", Input: `{"command":"sleep 60"}`}}})
			p := startServe(t, dir, "--allow-shell", "--allow", "sleep 60", "--shutdown-grace", "2s")
			streaming, streamingEvents := p.turnOn(t, "answer slowly")
			waitFor(t, "the first turn's request", func() bool { return len(srv.Requests()) == 1 }, p.stderr)
			calling, callingEvents := p.turnOn(t, "run a long command")
			readTo(t, callingEvents, "tool.started")

			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for name, events := range map[string]*bufio.Reader{"the streaming turn": streamingEvents, "the calling turn": callingEvents} {
				fin, types := finished(t, events)
				if fin["reason"] != "cancelled" || !strings.Contains(fin["error"].(string), "the server is closing") {
					t.Errorf("%s: turn.finished %v after %v, want cancelled as the server closes", name, fin, types)
				}
			}
			if code := exitCode(t, p.cmd); code != 0 {
				t.Fatalf("serve exited %d on %s, want 0; stderr:\n%s", code, sig, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "cancelled 2 running turn(s)") {
				t.Errorf("stderr does not say it cancelled the 2 turns:\n%s", p.stderr.String())
			}
			msgs := conversationMessages(t, dir, streaming)
			if len(msgs) != 2 || !msgs[1].Cut {
				t.Errorf("the streaming turn stored %+v, want its prompt and the cut answer", msgs)
			}
			msgs = conversationMessages(t, dir, calling)
			last := msgs[len(msgs)-1]
			if len(msgs) != 3 || len(last.Parts) != 1 || last.Parts[0].Type != history.ToolResultPart || last.Parts[0].CallID != "toolu_1" {
				t.Errorf("the calling turn stored %+v, want its prompt, the call and the call's result", msgs)
			}
		})
	}
}
