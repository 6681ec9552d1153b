package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A client whose Last-Event-ID is from a server process before this one
// (ids start again at 1) is told that events were lost and then gets every
// event this process keeps, the ones appended later included.
func TestAResumeFromAnIDOfAnEarlierProcessGetsTheEventsOfThisOne(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "first")
	done := w.until(t, EventTurnFinished)
	last := done[len(done)-1].Seq

	r := f.watch(id, "Last-Event-ID", "1000")
	lost := r.next(t)
	if lost.Type != "events.lost" || lost.Seq > last {
		t.Fatalf("first event %s id %d (this process's last is %d): %s", lost.Type, lost.Seq, last, lost.Data)
	}
	if ev := r.next(t); ev.Seq != lost.Seq+1 || ev.Type != EventTurnStarted {
		t.Fatalf("after events.lost %d: event %d %s, want %d turn.started", lost.Seq, ev.Seq, ev.Type, lost.Seq+1)
	}
	// and the next turn's events reach it, not another events.lost
	r.until(t, EventTurnFinished)
	f.startTurn(id, "second")
	if ev := r.next(t); ev.Type != EventTurnStarted || ev.Seq != last+1 {
		t.Fatalf("the next turn's first event: %d %s %s", ev.Seq, ev.Type, ev.Data)
	}
}

// An event's data is its text as itself: no HTML escaping of <, > and &
// (the stored records and the other answers are encoded the same way).
func TestEventDataIsNotHTMLEscaped(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "ok"})
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "a <b> & c")
	ev := w.next(t)
	if ev.Type != EventTurnStarted || !bytes.Contains(ev.Data, []byte(`a <b> & c`)) {
		t.Fatalf("turn.started data %s", ev.Data)
	}
}

// Cancelling on a conversation that does not exist says so, and leaves
// nothing behind in the server (any client could otherwise grow its map
// of conversations without bound).
func TestACancelOnNoConversationKeepsNothing(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		status, body := f.do("POST", "/v1/conversations/nope"+string(rune('a'+i))+"/turns/turn_x/cancel", "")
		if status != http.StatusNotFound || !strings.Contains(string(body), "no conversation") {
			t.Fatalf("cancel on no conversation: %d %s", status, body)
		}
	}
	f.srv.mu.Lock()
	n := len(f.srv.convs)
	f.srv.mu.Unlock()
	if n != 0 {
		t.Fatalf("the server keeps %d conversations after cancels on none", n)
	}
}

// A turn asked for after Close is refused with a JSON error that says the
// server is stopping, not started under a cancelled context.
func TestATurnAfterCloseIsRefused(t *testing.T) {
	f := newFixture(t, providertest.Step{Text: "ok"})
	id := f.newConversation()
	f.srv.Close()
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"hi"}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "stopping") {
		t.Fatalf("a turn after Close: %d %s", status, body)
	}
}

// The call of a tool with an empty body calls it with {} (its documented
// meaning), and so does null.
func TestAToolCallWithAnEmptyBodyIsCalledWithAnEmptyObject(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{"", "null"} {
		status, out := f.do("POST", "/v1/tools/noop--run/call", body)
		var o ToolOutput
		mustJSON(t, out, &o)
		if status != 200 || o.IsError || o.Text != "ok" {
			t.Fatalf("body %q: %d %s", body, status, out)
		}
	}
}

// The spills endpoint reads spill files only: a symbolic link inside
// .myelin/tool-results that points at another file of the workspace (or a
// linked directory) does not serve that file.
func TestTheSpillsEndpointDoesNotFollowALinkOutOfTheSpillDirectory(t *testing.T) {
	f := newFixture(t)
	root := f.srv.Workspace.Dir()
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("the secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spills := filepath.Join(root, ".myelin", "tool-results")
	if err := os.MkdirAll(spills, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../secret.txt", filepath.Join(spills, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(spills, "up")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".myelin/tool-results/link.txt", ".myelin/tool-results/up/secret.txt", ".myelin%2Ftool-results%2Fup%2Fsecret.txt",
		// a quoted component is the file it names to workspace--read
		`.myelin/tool-results/%22link.txt%22`, `.myelin/tool-results/%22up%22/secret.txt`, `.myelin/tool-results/up/%22secret.txt%22`} {
		status, body := f.do("GET", "/v1/spills/"+p, "")
		if bytes.Contains(body, []byte("the secret")) || status == 200 {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
}

// Watchers of a server that closes go away: no goroutine is left.
func TestClosingTheServerEndsItsStreamsWithNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		f := newFixture(t, providertest.Step{Text: "ok"})
		id := f.newConversation()
		ws := []*watcher{f.watch(id), f.watch(id), f.watch(id, "Last-Event-ID", "7")}
		f.srv.Close()
		for _, w := range ws {
			w.resp.Body.Close()
		}
		f.http.Close()
		f.fake.Close()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		http.DefaultClient.CloseIdleConnections()
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
	_ = context.Background
}

// A request that extends the one before but to another model (or other
// thinking settings) shares no cache with it: the diff must not say that
// its prompt is read from the cache without saying that the settings
// changed.
func TestADiffThatExtendsWithAnotherModelSaysTheSettingChanged(t *testing.T) {
	m1 := `{"role":"user","content":"hi"}`
	m2 := `{"role":"assistant","content":"yo"}`
	a := []byte(`{"model":"m1","messages":[` + m1 + `]}`)
	b := []byte(`{"model":"m2","messages":[` + m1 + `,` + m2 + `]}`)
	d := diffRequests(history.SentRequest{N: 1, Wire: "anthropic", Body: a}, history.SentRequest{N: 2, Wire: "anthropic", Body: b})
	if d.Kind != "extends" || d.Setting != "model" || !strings.Contains(d.Why, "model") {
		t.Fatalf("%s at %q, setting %q: %s", d.Kind, d.Path, d.Setting, d.Why)
	}
}

// Bodies that are not JSON objects are compared by their bytes, saying so,
// and a body that is JSON null is one of them.
func TestADiffOfBodiesThatAreNotJSONObjectsSaysSo(t *testing.T) {
	for _, body := range []string{`null`, `[1]`, `"text"`, `not json`, ``} {
		d := diffRequests(history.SentRequest{N: 1, Body: []byte(`{"messages":[]}`)}, history.SentRequest{N: 2, Body: []byte(body)})
		if d.Kind != "changed" || !strings.Contains(d.Why, "not a JSON object") {
			t.Errorf("against %q: %s: %s", body, d.Kind, d.Why)
		}
	}
}

// Close cancels the running turns and lets them store what they did; their
// watchers get the turn.finished that says so before their streams end
// (events are not kept across a restart: a stream cut first loses it for
// good).
func TestAWatcherSeesTheTurnFinishedOfATurnCutByClose(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f := newFixture(t, providertest.Step{Text: "never", Hold: hold})
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "wait")
	w.until(t, EventTurnStarted)
	closed := make(chan struct{})
	go func() { f.srv.Close(); close(closed) }()
	fin := w.until(t, EventTurnFinished)
	var tf turnFinishedEvent
	mustJSON(t, fin[len(fin)-1].Data, &tf)
	if tf.Reason != "cancelled" || !strings.Contains(tf.Error, "closing") {
		t.Fatalf("the turn cut by Close finished as %+v", tf)
	}
	<-closed
}

// Watchers that join or resume at any point while a turn appends (each
// from the id it last saw) get every later event once, in order, up to
// turn.finished: nothing lost between since() and an append.
func TestWatchersResumingMidTurnLoseNothingAndRepeatNothing(t *testing.T) {
	var steps []providertest.Step
	for i := range 40 {
		steps = append(steps, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprint("c", i), Name: "noop--run", Input: `{}`}}})
	}
	f := newFixture(t, append(steps, providertest.Step{Text: "done"})...)
	id := f.newConversation()
	first := f.watch(id)
	f.startTurn(id, "loop")
	type joiner struct {
		from int64
		w    *watcher
	}
	var joiners []joiner
	for {
		ev := first.next(t)
		if ev.Type == EventTurnFinished {
			break
		}
		if ev.Seq%9 == 0 && len(joiners) < 16 {
			// some from a little way back; each stream starts now, mid-turn,
			// and is read once the turn has finished (the log waits for it)
			from := ev.Seq - int64(len(joiners)%4)
			joiners = append(joiners, joiner{from, f.watch(id, "Last-Event-ID", fmt.Sprint(from))})
		}
	}
	if len(joiners) == 0 {
		t.Fatal("the turn had too few events to join it")
	}
	for _, j := range joiners {
		var seqs []int64
		for {
			e := j.w.next(t)
			seqs = append(seqs, e.Seq)
			if e.Type == EventTurnFinished || e.Type == "events.lost" {
				break
			}
		}
		for i, s := range seqs {
			if s != j.from+int64(i)+1 {
				t.Fatalf("a watcher from %d got %v", j.from, seqs)
			}
		}
	}
}

// The diff reads the other wires' bodies too: the Responses wire's
// instructions and input, Gemini's systemInstruction and contents, the
// OpenAI wire's system prompt as its first message.
func TestADiffReadsTheResponsesGeminiAndOpenAIBodies(t *testing.T) {
	for _, tc := range []struct {
		wire, a, b, kind, path string
	}{
		{"responses",
			`{"model":"m","instructions":"s","input":[{"role":"user","content":"hi"}],"prompt_cache_key":"k","stream":true}`,
			`{"model":"m","instructions":"s","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"t","arguments":"{}"}],"prompt_cache_key":"k","stream":true}`,
			"extends", "input[1]"},
		{"responses",
			`{"model":"m","instructions":"s","input":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","instructions":"s2","input":[{"role":"user","content":"hi"}]}`,
			"changed", "instructions"},
		{"gemini",
			`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":10}}`,
			`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"yo"}]}],"generationConfig":{"maxOutputTokens":10}}`,
			"extends", "contents[1]"},
		{"gemini",
			`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi!"}]}]}`,
			"changed", "contents[0].parts[0].text"},
		{"openai",
			`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"stream":true}`,
			`{"model":"m","messages":[{"role":"system","content":"s2"},{"role":"user","content":"hi"}],"stream":true}`,
			"changed", "messages[0].content"},
	} {
		d := diffRequests(history.SentRequest{N: 1, Wire: tc.wire, Body: []byte(tc.a)}, history.SentRequest{N: 2, Wire: tc.wire, Body: []byte(tc.b)})
		if d.Kind != tc.kind || d.Path != tc.path || d.Setting != "" {
			t.Errorf("%s: %s at %q (setting %q): %s; want %s at %q", tc.wire, d.Kind, d.Path, d.Setting, d.Why, tc.kind, tc.path)
		}
	}
}
