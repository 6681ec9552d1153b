package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/background"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/purge"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/script"
	"github.com/myelin-run/myelin/tool"
)

func TestDeleteRemovesAConversationItsSpillFilesAndItsEvents(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "big--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	id := f.newConversation()
	keep := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	evs := w.until(t, EventTurnFinished)
	var spill string
	for _, e := range evs {
		if e.Type == EventToolFinished {
			var tf toolFinishedEvent
			mustJSON(t, e.Data, &tf)
			spill = tf.SpillPath
		}
	}
	if spill == "" {
		t.Fatal("the turn spilled no result")
	}
	onDisk := filepath.Join(f.srv.Workspace.Dir(), filepath.FromSlash(spill))
	if _, err := os.Stat(onDisk); err != nil {
		t.Fatalf("the spill file before the delete: %v", err)
	}
	status, body := f.do("DELETE", "/v1/conversations/"+id, "")
	var d purge.Deleted
	mustJSON(t, body, &d)
	if status != http.StatusOK || d.Conversation != id || d.Messages != 4 || d.Requests != 2 || len(d.Files) != 1 || d.Files[0] != spill {
		t.Fatalf("DELETE: %d %s; want 200 with 4 messages, 2 requests and the spill file %s", status, body, spill)
	}
	if _, err := os.Stat(onDisk); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spill file after the delete: %v; want it removed", err)
	}
	if _, err := f.store.Get(context.Background(), id); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("the store after the delete: %v; want ErrNotFound", err)
	}
	if last, _ := f.srv.log.Last(context.Background(), id); last != 0 {
		t.Errorf("the conversation's events after the delete: the last is %d; want none kept", last)
	}
	for _, path := range []string{"/v1/conversations/" + id, "/v1/conversations/" + id + "/messages"} {
		if status, body := f.do("GET", path, ""); status != http.StatusNotFound {
			t.Errorf("GET %s after the delete: %d %s; want 404", path, status, body)
		}
	}
	if status, body := f.do("DELETE", "/v1/conversations/"+id, ""); status != http.StatusNotFound || !strings.Contains(string(body), "no conversation") {
		t.Errorf("DELETE again: %d %s; want 404", status, body)
	}
	if status, _ := f.do("GET", "/v1/conversations/"+keep, ""); status != http.StatusOK {
		t.Errorf("the other conversation after the delete: %d; want it kept", status)
	}
}

func TestDeleteIsRefusedWhileATurnRunsIt(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f := newFixture(t, providertest.Step{Text: "slow", Hold: hold})
	id := f.newConversation()

	// another writer, outside this server
	other := history.NewHolder()
	if _, err := f.store.Claim(context.Background(), id, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	status, body := f.do("DELETE", "/v1/conversations/"+id, "")
	var held Held
	mustJSON(t, body, &held)
	if status != http.StatusConflict || held.Error.Holder == nil || held.Error.Holder.Token != other.Token || !strings.Contains(held.Error.Message, "nothing was deleted") {
		t.Fatalf("DELETE while another writer holds it: %d %s; want 409 naming the holder", status, body)
	}
	if err := f.store.Release(context.Background(), id, other); err != nil {
		t.Fatal(err)
	}

	// this server's own running turn
	w := f.watch(id)
	ts := f.startTurn(id, "hi")
	w.until(t, EventTurnStarted)
	status, body = f.do("DELETE", "/v1/conversations/"+id, "")
	mustJSON(t, body, &held)
	if status != http.StatusConflict || held.Error.Turn != ts.Turn {
		t.Fatalf("DELETE while this server's turn runs it: %d %s; want 409 naming turn %s", status, body, ts.Turn)
	}
	if _, err := f.store.Get(context.Background(), id); err != nil {
		t.Fatalf("the conversation after the refused deletes: %v", err)
	}
}

func TestAMethodNotTakenNamesDeleteAmongTheMethodsAllowed(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	req, _ := http.NewRequest("PUT", f.http.URL+"/v1/conversations/"+id, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, DELETE" {
		t.Fatalf("PUT: %d, Allow %q; want 405 and GET, DELETE", res.StatusCode, res.Header.Get("Allow"))
	}
}

func TestDeleteCancelsTheBackgroundScriptsTheConversationStarted(t *testing.T) {
	f := newFixture(t)
	env := result.Env{Store: f.srv.Workspace}
	m, err := background.New(background.Config{Script: script.Config{Tools: f.srv.Agent.Tools, Env: env}, Root: f.srv.Workspace.Dir(), Env: env, Waker: f.srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	f.srv.Background = m
	id, other := f.newConversation(), f.newConversation()
	for _, conv := range []string{id, other} {
		if res := m.Start(tool.WithConversation(context.Background(), conv), "await sleep(3600000)", 0); res.IsError {
			t.Fatalf("starting a script: %v", res.Data)
		}
	}
	if status, body := f.do("DELETE", "/v1/conversations/"+id, ""); status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", status, body)
	}
	for conv, want := range map[string]string{id: "cancelled", other: "running"} {
		infos := m.List(conv)
		if len(infos) != 1 || infos[0].Status != want {
			t.Errorf("the script of conversation %s after the delete: %+v; want it %s", conv, infos, want)
		}
	}
}
