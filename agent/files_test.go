package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
	"github.com/myelin-run/myelin/workspace"
)

// host is one agent on its own workspace directory, as on its own host,
// with the store and the fake provider the test shares between hosts.
type host struct {
	ws    *workspace.Workspace
	agent *Agent
}

// bigLines is a tool output well over the inline cap.
func bigLines(what string) string {
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "%s row %d: some output of the tool\n", what, i)
	}
	return b.String()
}

// payload is a binary payload a tool returns, saved as a workspace file.
var payload = []byte("RIFF\x00\x01\x02\xff\xfe binary audio \x00\x00")

// spillingTools are tools whose results are saved as workspace files in
// each way the conversion saves them: a spilled string (Save), a spilled
// TextFile (SaveFile) and a binary payload.
func spillingTools(t *testing.T) []*tool.Tool {
	return []*tool.Tool{
		tool.MustFunc("big--text", "A big text.", func(ctx context.Context, in struct{}) (any, error) {
			return bigLines("text"), nil
		}),
		tool.MustFunc("big--file", "A big text in a file.", func(ctx context.Context, in struct{}) (any, error) {
			p := filepath.Join(t.TempDir(), "out.txt")
			if err := os.WriteFile(p, []byte(bigLines("file")), 0o644); err != nil {
				return nil, err
			}
			return result.Result{Data: result.TextFile{Path: p}}, nil
		}),
		tool.MustFunc("audio--get", "Some audio.", func(ctx context.Context, in struct{}) (any, error) {
			return []result.Block{result.AudioBlock{MIMEType: "audio/wav", Data: payload}}, nil
		}),
	}
}

func newHost(t *testing.T, store history.Store, srv *providertest.Server) *host {
	t.Helper()
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	p, err := testWires["anthropic"].provider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	reg := &tool.Registry{}
	if err := reg.Add(append(ws.Tools(), spillingTools(t)...)...); err != nil {
		t.Fatal(err)
	}
	return &host{ws: ws, agent: &Agent{Provider: p, Store: store, Tools: reg, Env: result.Env{Store: ws}, Model: "claude-test"}}
}

// readHere runs a workspace--read call on h's workspace as a tool call of
// no conversation: what the file holds here.
func (h *host) readHere(t *testing.T, input string) string {
	t.Helper()
	d := &tool.Dispatcher{Tools: h.agent.Tools, Env: h.agent.Env}
	return d.Call(context.Background(), tool.Call{ID: "here", Name: "workspace--read", Input: json.RawMessage(input)}).Text
}

var (
	readyCall = regexp.MustCompile(`workspace--read (\{[^}]*\})`)
	savedTo   = regexp.MustCompile(`saved to workspace file (\S+)\]`)
)

// results are the tool results stored in conversation id's last user
// message, by call id.
func lastResults(t *testing.T, store history.Store, id string) map[string]history.Part {
	t.Helper()
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]history.Part{}
	for i := len(msgs) - 1; i >= 0 && len(out) == 0; i-- {
		for _, p := range msgs[i].Parts {
			if p.Type == history.ToolResultPart {
				out[p.CallID] = p
			}
		}
	}
	return out
}

func TestAConversationResumedOnAnotherWorkspaceReadsItsSpillFilesAsTheModelSawThem(t *testing.T) {
	ctx := context.Background()
	store := &history.Memory{ShareBlobs: true}
	srv := testWires["anthropic"].server(t)
	a, b := newHost(t, store, srv), newHost(t, store, srv)
	id, err := a.agent.NewConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// on A: a round whose three results are saved as files
	srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_1", Name: "big--text", Input: `{}`},
		{ID: "toolu_2", Name: "big--file", Input: `{}`},
		{ID: "toolu_3", Name: "audio--get", Input: `{}`},
	}}, providertest.Step{Text: "seen"})
	if _, err := a.agent.Turn(ctx, id, "make big output", nil); err != nil {
		t.Fatal(err)
	}
	first := lastResults(t, store, id)
	var calls []providertest.ToolCall // the model's ready calls, as it would make them
	var files []string
	for _, cid := range []string{"toolu_1", "toolu_2"} {
		p := first[cid]
		m := readyCall.FindStringSubmatch(p.Text)
		if p.SpillPath == "" || m == nil {
			t.Fatalf("%s was not spilled with a ready call: %q", cid, p.Text)
		}
		calls = append(calls, providertest.ToolCall{ID: cid + "_next", Name: "workspace--read", Input: m[1]})
		files = append(files, p.SpillPath)
	}
	m := savedTo.FindStringSubmatch(first["toolu_3"].Text)
	if m == nil {
		t.Fatalf("the payload was not saved: %q", first["toolu_3"].Text)
	}
	calls = append(calls, readCall("toolu_3_read", m[1]))
	files = append(files, m[1])

	// on B, whose workspace is empty: the same calls give the same text
	srv.Push(providertest.Step{ToolCalls: calls}, providertest.Step{Text: "read on"})
	if _, err := b.agent.Turn(ctx, id, "go on", nil); err != nil {
		t.Fatal(err)
	}
	onB := lastResults(t, store, id)
	for _, c := range calls {
		want := a.readHere(t, c.Input)
		if got := onB[c.ID].Text; got != want {
			t.Errorf("%s on the other workspace gives\n%.300q\nwant, as on the first:\n%.300q", c.Input, got, want)
		}
	}
	if !strings.Contains(onB["toolu_1_next"].Text, "text row ") || !strings.Contains(onB["toolu_2_next"].Text, "file row ") {
		t.Fatalf("the pages read on B are not the spilled text: %.200q", onB["toolu_1_next"].Text)
	}
	for _, f := range files {
		wantBytes, _ := os.ReadFile(filepath.Join(a.ws.Dir(), f))
		gotBytes, err := os.ReadFile(filepath.Join(b.ws.Dir(), f))
		if err != nil || string(gotBytes) != string(wantBytes) || len(wantBytes) == 0 {
			t.Errorf("%s on B: %d bytes, %v; want A's %d bytes", f, len(gotBytes), err, len(wantBytes))
		}
	}
	// the first round's results are stored as A stored them
	if again := lastResultsAt(t, store, id, first); again != "" {
		t.Fatal(again)
	}
	// and the next request is the same built on either workspace
	requestOnA, errA := a.agent.Request(ctx, id)
	requestOnB, errB := b.agent.Request(ctx, id)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	wantJSON, _ := json.Marshal(requestOnA)
	gotJSON, _ := json.Marshal(requestOnB)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("the request built on B differs from the one built on A:\n%.2000s\n%.2000s", gotJSON, wantJSON)
	}
}

// lastResultsAt says how the results stored for the calls of want differ
// from want now, "" when they do not.
func lastResultsAt(t *testing.T, store history.Store, id string, want map[string]history.Part) string {
	msgs, err := store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if w, ok := want[p.CallID]; ok && p.Type == history.ToolResultPart && p.Text != w.Text {
				return fmt.Sprintf("the stored result of %s changed", p.CallID)
			}
		}
	}
	return ""
}

// loggingStore is a shared Memory that logs the files it keeps and the
// messages appended, in order, and can fail PutBlob.
type loggingStore struct {
	*history.Memory
	mu   sync.Mutex
	log  []string
	fail error
}

func (s *loggingStore) PutBlob(ctx context.Context, id, path string, data []byte) (string, error) {
	s.mu.Lock()
	s.log = append(s.log, "blob "+path)
	s.mu.Unlock()
	if s.fail != nil {
		return "", s.fail
	}
	return s.Memory.PutBlob(ctx, id, path, data)
}

func (s *loggingStore) Append(ctx context.Context, id string, msgs ...history.Message) error {
	s.mu.Lock()
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == history.ToolResultPart {
				s.log = append(s.log, "result "+p.CallID)
			}
		}
	}
	s.mu.Unlock()
	return s.Memory.Append(ctx, id, msgs...)
}

// spillingTurn runs a turn on a new conversation, on a new host with
// store, whose one call's result is spilled; it returns the conversation's
// id and the fake provider.
func spillingTurn(t *testing.T, store history.Store) (string, *providertest.Server) {
	t.Helper()
	ctx := context.Background()
	srv := testWires["anthropic"].server(t)
	a := newHost(t, store, srv)
	id, err := a.agent.NewConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "big--text", Input: `{}`}}}, providertest.Step{Text: "ok"})
	if _, err := a.agent.Turn(ctx, id, "go", nil); err != nil {
		t.Fatal(err)
	}
	return id, srv
}

func TestAFileIsKeptInTheSharedStoreBeforeTheResultNamingItIsStored(t *testing.T) {
	store := &loggingStore{Memory: &history.Memory{ShareBlobs: true}}
	id, srv := spillingTurn(t, store)
	spill := lastResults(t, store, id)["toolu_1"].SpillPath
	want := []string{"blob " + spill, "result toolu_1"}
	if strings.Join(store.log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the store saw\n%s\nwant\n%s", strings.Join(store.log, "\n"), strings.Join(want, "\n"))
	}
	if len(srv.Requests()) != 2 {
		t.Fatalf("%d requests; want the result sent once", len(srv.Requests()))
	}
}

func TestAFileTheSharedStoreCannotKeepIsReportedAsNotKept(t *testing.T) {
	store := &loggingStore{Memory: &history.Memory{ShareBlobs: true}, fail: errors.New("the database is down")}
	id, _ := spillingTurn(t, store)
	p := lastResults(t, store, id)["toolu_1"]
	if p.SpillPath != "" || !strings.Contains(p.Text, "The rest was not kept") || !strings.Contains(p.Text, "the database is down") {
		t.Fatalf("the result names a file other hosts cannot read, or does not say why: spill %q, text ends %q", p.SpillPath, p.Text[max(0, len(p.Text)-300):])
	}
}

func TestAStoreThatIsNotSharedKeepsNoFilesAndFetchesNone(t *testing.T) {
	ctx := context.Background()
	store := &loggingStore{Memory: &history.Memory{}}
	id, srv := spillingTurn(t, store)
	b := newHost(t, store, srv)
	spill := lastResults(t, store, id)["toolu_1"].SpillPath
	srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("toolu_2", spill)}}, providertest.Step{Text: "ok"})
	if _, err := b.agent.Turn(ctx, id, "go on", nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(store.log, "\n"), "blob ") {
		t.Fatalf("a store that is not shared was given files: %v", store.log)
	}
	if got := lastResults(t, store, id)["toolu_2"]; !got.IsError || !strings.Contains(got.Text, "does not exist") {
		t.Fatalf("the read on the other workspace = %q; want does not exist", got.Text)
	}
}

// A worker that stopped while reading a spill file: the host that takes
// the conversation over runs the read again (it may run again) and finds
// the file through the store, as the model's own ready call would.
func TestACallRunAgainOnTakeoverReadsASpillFileMadeOnAnotherHost(t *testing.T) {
	ctx := context.Background()
	store := &history.Memory{ShareBlobs: true}
	id, srv := spillingTurn(t, store)
	spill := lastResults(t, store, id)["toolu_1"].SpillPath
	input := `{"path":"` + spill + `","offset":100,"limit":5}`
	// the call the stopped worker was running, stored without its result
	if err := store.Append(ctx, id, history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "read it"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "toolu_9", Name: "workspace--read", Input: json.RawMessage(input)}}}); err != nil {
		t.Fatal(err)
	}
	b := newHost(t, store, srv)
	srv.Push(providertest.Step{Text: "ok"})
	if _, err := b.agent.Turn(ctx, id, "go on", nil); err != nil {
		t.Fatal(err)
	}
	msgs, _ := store.Messages(ctx, id)
	var got history.Part
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.CallID == "toolu_9" && p.Type == history.ToolResultPart {
				got = p
			}
		}
	}
	if got.IsError || !strings.Contains(got.Text, "   100\ttext row 100: ") || !strings.Contains(got.Text, "lines 100-104 of 3000") {
		t.Fatalf("the read run again on the other host = %q (error %v); want lines 100-104 of the spill file", got.Text, got.IsError)
	}
}
