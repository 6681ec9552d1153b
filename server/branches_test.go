package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/rewind"
)

// turn runs a turn of conversation id through the API and waits for its
// turn.finished on w.
func (f *fixture) turn(t *testing.T, w *watcher, id, prompt string) {
	t.Helper()
	f.startTurn(id, prompt)
	w.until(t, EventTurnFinished)
}

// texts are conversation id's stored messages' texts, in order.
func (f *fixture) texts(t *testing.T, id string) string {
	t.Helper()
	msgs, err := f.store.Messages(context.Background(), id)
	if err != nil {
		t.Fatalf("messages of %s: %v", id, err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text())
	}
	return strings.Join(out, "|")
}

// twoTurns is a fixture whose conversation has had two turns: "a"
// answered "A", "b" answered "B"; the provider answers "C" next.
func twoTurns(t *testing.T) (*fixture, string, *watcher) {
	t.Helper()
	f := newFixture(t, providertest.Step{Text: "A"}, providertest.Step{Text: "B"}, providertest.Step{Text: "C"})
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "a")
	f.turn(t, w, id, "b")
	if got := f.texts(t, id); got != "a|A|b|B" {
		t.Fatalf("the conversation after two turns reads %q", got)
	}
	return f, id, w
}

func TestAForkThroughTheAPIContinuesTheBasesFirstNMessages(t *testing.T) {
	f, id, _ := twoTurns(t)
	status, body := f.do("POST", "/v1/conversations/"+id+"/fork", `{"at":2}`)
	var fork ConversationInfo
	mustJSON(t, body, &fork)
	if status != http.StatusCreated || fork.ID == "" || fork.ID == id || fork.Base != id || fork.BaseAt != 2 || fork.Messages != 2 {
		t.Fatalf("fork at 2: %d %s; want 201 with a new id, base %s, base_at 2, 2 messages", status, body, id)
	}
	base, _ := f.store.Messages(context.Background(), id)
	got, _ := f.store.Messages(context.Background(), fork.ID)
	if len(got) != 2 {
		t.Fatalf("the fork holds %d messages, want the base's first 2", len(got))
	}
	for i := range got {
		a, _ := result.JSON(base[i])
		b, _ := result.JSON(got[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("the fork's message %d is\n%s\nthe base's is\n%s", i+1, b, a)
		}
	}
	// without at: all of them
	status, body = f.do("POST", "/v1/conversations/"+id+"/fork", "")
	mustJSON(t, body, &fork)
	if status != http.StatusCreated || fork.BaseAt != 4 || fork.Messages != 4 {
		t.Fatalf("fork without at: %d %s; want 201 continuing all 4 messages", status, body)
	}
	// the list shows where each fork comes from
	status, body = f.do("GET", "/v1/conversations", "")
	if status != 200 || !strings.Contains(string(body), `"base":"`+id+`","base_at":4`) {
		t.Fatalf("the list does not show the fork's base and point: %d %s", status, body)
	}
}

func TestAForkRewindOrSwitchOfNoConversationIs404(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ path, body string }{
		{"/fork", ""}, {"/rewind", `{"at":0}`}, {"/undo", ""}, {"/redo", ""}, {"/switch", `{"branch":"x~1"}`},
	} {
		status, body := f.do("POST", "/v1/conversations/nope"+c.path, c.body)
		if status != http.StatusNotFound || !strings.Contains(string(body), `no conversation \"nope\"`) {
			t.Errorf("POST %s of no conversation: %d %s; want 404 naming it", c.path, status, body)
		}
	}
	if status, body := f.do("GET", "/v1/conversations/nope/branches", ""); status != http.StatusNotFound {
		t.Errorf("GET branches of no conversation: %d %s; want 404", status, body)
	}
}

func TestBadPointsAndBranchesAre400SayingWhatWasWrong(t *testing.T) {
	f, id, _ := twoTurns(t)
	other := f.newConversation()
	for _, c := range []struct{ path, body, want string }{
		{"/fork", `{"at":5}`, "a fork continues from 0 to 4"},
		{"/fork", `{"at":-1}`, "a fork continues from 0 to 4"},
		{"/fork", `{"at":"2"}`, "not the JSON this endpoint takes"},
		{"/rewind", `{}`, "a rewind needs its point"},
		{"/rewind", `{"at":4}`, "a rewind keeps 0 to 3"},
		{"/rewind", `{"at":-1}`, "a rewind keeps 0 to 3"},
		{"/rewind", `{"at":1,"file":true}`, "unknown field"},
		{"/switch", `{}`, `a switch needs the branch`},
		{"/switch", `{"branch":"` + other + `"}`, "is a conversation of its own"},
		{"/switch", `{"branch":"` + id + `~9"}`, "is not in the store"},
	} {
		status, body := f.do("POST", "/v1/conversations/"+id+c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("POST %s %s: %d %s; want 400 saying %q", c.path, c.body, status, body, c.want)
		}
	}
	if got := f.texts(t, id); got != "a|A|b|B" {
		t.Fatalf("the conversation after the refused requests reads %q", got)
	}
	status, body := f.do("POST", "/v1/conversations/"+other+"/undo", "")
	if status != http.StatusConflict || !strings.Contains(string(body), "no turn to undo") {
		t.Errorf("undo of an empty conversation: %d %s; want 409 saying there is nothing to undo", status, body)
	}
	status, body = f.do("POST", "/v1/conversations/"+id+"/redo", "")
	if status != http.StatusConflict || !strings.Contains(string(body), "nothing to redo") {
		t.Errorf("redo with no branch: %d %s; want 409 saying there is nothing to redo", status, body)
	}
}

// Rewind, a turn on the rewound conversation, then a switch back: both
// branches are intact, each switch swaps them, and each change is an
// event on the conversation's stream.
func TestRewindThenATurnThenSwitchBackKeepsBothBranches(t *testing.T) {
	f, id, w := twoTurns(t)
	status, body := f.do("POST", "/v1/conversations/"+id+"/rewind", `{"at":2}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK || rw.Conversation.Messages != 2 || rw.Branch.BranchOf != id || rw.Branch.At != 2 || rw.Branch.Messages != 4 || rw.Files != nil {
		t.Fatalf("rewind at 2: %d %s; want 200, the conversation at 2 messages, a branch of it parting at 2 holding 4, no files report", status, body)
	}
	branch := rw.Branch.ID
	ev := w.next(t)
	var re rewoundEvent
	mustJSON(t, ev.Data, &re)
	if ev.Type != EventRewound || re.By != "rewind" || re.At != 2 || re.Branch != branch {
		t.Fatalf("the event after the rewind: %s %s; want %s by rewind at 2 to %s", ev.Type, ev.Data, EventRewound, branch)
	}
	if got := f.texts(t, id); got != "a|A" {
		t.Fatalf("the conversation after the rewind reads %q", got)
	}
	f.turn(t, w, id, "c")
	if got, kept := f.texts(t, id), f.texts(t, branch); got != "a|A|c|C" || kept != "a|A|b|B" {
		t.Fatalf("after a turn on the rewound conversation: it reads %q, its branch %q", got, kept)
	}

	// the branches, listed and named by the conversation's record
	status, body = f.do("GET", "/v1/conversations/"+id+"/branches", "")
	var list struct{ Branches []Branch }
	mustJSON(t, body, &list)
	if status != 200 || len(list.Branches) != 1 || list.Branches[0].ID != branch || list.Branches[0].At != 2 || list.Branches[0].BranchOf != id {
		t.Fatalf("branches: %d %s; want %s parting at 2", status, body, branch)
	}
	status, body = f.do("GET", "/v1/conversations/"+id, "")
	var info ConversationInfo
	mustJSON(t, body, &info)
	if status != 200 || len(info.Branches) != 1 || info.Branches[0] != (BranchRef{ID: branch, At: 2, Messages: 4}) {
		t.Fatalf("GET the conversation: %d %s; want its branch %s at 2 with 4 messages", status, body, branch)
	}

	status, body = f.do("POST", "/v1/conversations/"+id+"/switch", `{"branch":"`+branch+`"}`)
	var sw Switched
	mustJSON(t, body, &sw)
	if status != http.StatusOK || sw.Branch.ID != branch || sw.Branch.At != 2 || sw.Conversation.Messages != 4 {
		t.Fatalf("switch: %d %s", status, body)
	}
	ev = w.next(t)
	var se switchedEvent
	mustJSON(t, ev.Data, &se)
	if ev.Type != EventSwitched || se.By != "switch" || se.Branch != branch || se.At != 2 || se.Messages != 4 {
		t.Fatalf("the event after the switch: %s %s; want %s by switch to %s at 2", ev.Type, ev.Data, EventSwitched, branch)
	}
	if got, kept := f.texts(t, id), f.texts(t, branch); got != "a|A|b|B" || kept != "a|A|c|C" {
		t.Fatalf("after the switch: the conversation reads %q, the branch %q", got, kept)
	}
	if status, body := f.do("POST", "/v1/conversations/"+id+"/switch", `{"branch":"`+branch+`"}`); status != http.StatusOK {
		t.Fatalf("switch back: %d %s", status, body)
	}
	if got, kept := f.texts(t, id), f.texts(t, branch); got != "a|A|c|C" || kept != "a|A|b|B" {
		t.Fatalf("after switching back: the conversation reads %q, the branch %q", got, kept)
	}
}

// Undo takes back the last turn as a branch; redo brings it back.
func TestUndoTakesBackTheLastTurnAndRedoBringsItBack(t *testing.T) {
	f, id, w := twoTurns(t)
	status, body := f.do("POST", "/v1/conversations/"+id+"/undo", `{"files":true}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK || rw.Conversation.Messages != 2 || rw.Branch.Messages != 4 || rw.Files == nil || rw.Files.NotTracked == "" {
		t.Fatalf("undo with files: %d %s; want 200, 2 messages left, the files report with what is not tracked", status, body)
	}
	if ev := w.next(t); ev.Type != EventRewound || !strings.Contains(string(ev.Data), `"by":"undo"`) {
		t.Fatalf("the event after undo: %s %s", ev.Type, ev.Data)
	}
	status, body = f.do("POST", "/v1/conversations/"+id+"/redo", "")
	var sw Switched
	mustJSON(t, body, &sw)
	if status != http.StatusOK || sw.Branch.ID != rw.Branch.ID || sw.Conversation.Messages != 4 || sw.Files != nil {
		t.Fatalf("redo: %d %s; want 200 switching back to %s", status, body, rw.Branch.ID)
	}
	if ev := w.next(t); ev.Type != EventSwitched || !strings.Contains(string(ev.Data), `"by":"redo"`) {
		t.Fatalf("the event after redo: %s %s", ev.Type, ev.Data)
	}
	if got := f.texts(t, id); got != "a|A|b|B" {
		t.Fatalf("after undo and redo the conversation reads %q", got)
	}
}

// A write that is not a turn never races one: while a turn of the
// conversation runs on this server, is queued for a worker, or another
// writer holds its claim, a rewind, undo, redo or switch is 409 and
// changes nothing. A fork is not a write of its base: it is made.
func TestRewindUndoRedoAndSwitchAreRefusedWhileATurnRunsOrIsQueued(t *testing.T) {
	hold := make(chan struct{})
	f := newFixture(t, providertest.Step{Text: "A"}, providertest.Step{Text: "B"}, providertest.Step{Text: "slow", Hold: hold})
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "a")
	f.turn(t, w, id, "b")
	status, body := f.do("POST", "/v1/conversations/"+id+"/rewind", `{"at":2}`)
	if status != http.StatusOK {
		t.Fatalf("rewind: %d %s", status, body)
	}
	var rw Rewound
	mustJSON(t, body, &rw)
	writes := []struct{ path, body string }{
		{"/rewind", `{"at":1}`}, {"/undo", ""}, {"/redo", ""}, {"/switch", `{"branch":"` + rw.Branch.ID + `"}`},
	}
	refused := func(who string, check func(Held) bool) {
		t.Helper()
		for _, c := range writes {
			status, body := f.do("POST", "/v1/conversations/"+id+c.path, c.body)
			var h Held
			mustJSON(t, body, &h)
			if status != http.StatusConflict || !check(h) {
				t.Errorf("POST %s while %s: %d %s; want 409 naming it", c.path, who, status, body)
			}
		}
	}

	// this server's running turn
	ts := f.startTurn(id, "c")
	w.until(t, EventTurnStarted)
	refused("this server's turn runs", func(h Held) bool {
		return h.Error.Turn == ts.Turn && strings.Contains(h.Error.Message, "nothing was")
	})
	status, body = f.do("POST", "/v1/conversations/"+id+"/fork", "")
	if status != http.StatusCreated {
		t.Errorf("fork while a turn runs: %d %s; want 201 (a fork writes nothing of its base)", status, body)
	}
	close(hold)
	w.until(t, EventTurnFinished)
	if got, kept := f.texts(t, id), f.texts(t, rw.Branch.ID); got != "a|A|c|slow" || kept != "a|A|b|B" {
		t.Fatalf("after the refused writes: the conversation reads %q, its branch %q", got, kept)
	}

	// another writer holding the claim (a worker, another process)
	other := history.NewHolder()
	if _, err := f.store.Claim(context.Background(), id, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	refused("another writer holds it", func(h Held) bool {
		return h.Error.Holder != nil && h.Error.Holder.Token == other.Token
	})
	if err := f.store.Release(context.Background(), id, other); err != nil {
		t.Fatal(err)
	}

	// a turn queued for a worker, not yet taken
	q := &memQueue{store: f.store, pending: map[string]QueuedTurn{id: {Turn: "turn_queued"}}, jobs: make(chan QueuedTurn, 1)}
	f.srv.Queue = q
	refused("a turn is queued", func(h Held) bool { return h.Error.Turn == "turn_queued" })
	if got := f.texts(t, id); got != "a|A|c|slow" {
		t.Fatalf("after the refused writes: the conversation reads %q", got)
	}
	// and once it has run, the claim taken for a rewind is given back:
	// the next turn starts
	q.done(id)
	f.srv.Queue = nil
	if status, body := f.do("POST", "/v1/conversations/"+id+"/undo", ""); status != http.StatusOK {
		t.Fatalf("undo once nothing runs: %d %s", status, body)
	}
	if _, err := f.store.Claim(context.Background(), id, history.NewHolder(), time.Minute); err != nil {
		t.Fatalf("claiming the conversation after an undo: %v; want the undo's claim released", err)
	}
}

// branchless is a store that keeps no forks or branches.
type branchless struct{ history.Store }

func TestForksAndBranchesOnAStoreThatKeepsNoneAre501(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	f.srv.Agent.Store = branchless{f.store}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/fork", ""}, {"POST", "/rewind", `{"at":0}`}, {"POST", "/undo", ""}, {"POST", "/redo", ""},
		{"POST", "/switch", `{"branch":"x"}`}, {"GET", "/branches", ""},
	} {
		status, body := f.do(c.method, "/v1/conversations/"+id+c.path, c.body)
		if status != http.StatusNotImplemented || !strings.Contains(string(body), "keeps no forks") {
			t.Errorf("%s %s on a store without branches: %d %s; want 501 saying so", c.method, c.path, status, body)
		}
	}
	if status, body := f.do("GET", "/v1/conversations/"+id, ""); status != http.StatusOK {
		t.Errorf("GET the conversation on a store without branches: %d %s", status, body)
	}
}

// A conversation whose messages a fork shares is not deleted: 409, not a
// failure of the server.
func TestDeletingAConversationAForkSharesIs409(t *testing.T) {
	f, id, _ := twoTurns(t)
	status, body := f.do("POST", "/v1/conversations/"+id+"/fork", `{"at":2}`)
	if status != http.StatusCreated {
		t.Fatalf("fork: %d %s", status, body)
	}
	var fork ConversationInfo
	mustJSON(t, body, &fork)
	status, body = f.do("DELETE", "/v1/conversations/"+id, "")
	if status != http.StatusConflict || !strings.Contains(string(body), fork.ID) {
		t.Fatalf("DELETE of a forked conversation: %d %s; want 409 naming the fork %s", status, body, fork.ID)
	}
	if got := f.texts(t, fork.ID); got != "a|A" {
		t.Fatalf("the fork after the refused delete reads %q", got)
	}
}

// With "files", the server's workspace goes back with the conversation:
// the files the tools changed after the point are put back or removed,
// one changed since by someone else is left and said, and the report
// says what is never tracked; the event carries the same report.
func TestARewindWithFilesPutsBackTheWorkspaceAndReportsIt(t *testing.T) {
	f := newFixture(t)
	id := f.newConversation()
	ctx := context.Background()
	dir := f.srv.Workspace.Dir()
	disk := func(name string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return string(b), err == nil
	}
	put := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	version := func(content string) string {
		h, err := f.store.PutBlob(ctx, id, history.FileVersionPath(history.BlobHash([]byte(content))), []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// what a turn's workspace--write calls did, as the agent stores it
	changes := []history.FileChange{
		{Path: "new.txt", Created: true, After: version("made")},
		{Path: "kept.txt", Before: version("old"), After: version("new")},
		{Path: "theirs.txt", Before: version("x"), After: version("y")},
	}
	put("new.txt", "made")
	put("kept.txt", "new")
	put("theirs.txt", "changed by someone else since")
	err := f.store.Append(ctx, id,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "write"}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.ToolCallPart, CallID: "w1", Name: "workspace--write"}}},
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "w1", Text: "written", Files: changes}}},
		history.Message{Role: history.Assistant, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	w := f.watch(id)
	status, body := f.do("POST", "/v1/conversations/"+id+"/rewind", `{"at":0,"files":true}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK || rw.Files == nil {
		t.Fatalf("rewind with files: %d %s", status, body)
	}
	got := rw.Files
	if strings.Join(got.Restored, ",") != "kept.txt" || strings.Join(got.Removed, ",") != "new.txt" ||
		len(got.Skipped) != 1 || got.Skipped[0].Path != "theirs.txt" || got.Skipped[0].Why == "" || got.NotTracked != rewind.NotTracked {
		t.Fatalf("the files report: %s; want kept.txt restored, new.txt removed, theirs.txt skipped with why, and what is not tracked", body)
	}
	if c, ok := disk("kept.txt"); !ok || c != "old" {
		t.Errorf("kept.txt after the rewind: %q (there: %v); want it put back to %q", c, ok, "old")
	}
	if _, ok := disk("new.txt"); ok {
		t.Error("new.txt after the rewind: still there; want it removed (created after the point)")
	}
	if c, _ := disk("theirs.txt"); c != "changed by someone else since" {
		t.Errorf("theirs.txt after the rewind: %q; want it left as someone else left it", c)
	}
	ev := w.next(t)
	var re rewoundEvent
	mustJSON(t, ev.Data, &re)
	if ev.Type != EventRewound || re.Files == nil || strings.Join(re.Files.Removed, ",") != "new.txt" || re.Files.NotTracked == "" {
		t.Fatalf("the event after a rewind with files: %s %s; want the files report in it", ev.Type, ev.Data)
	}
}

// slowRewind is a Memory whose Rewind waits for the test, to hold a
// rewind in the middle.
type slowRewind struct {
	*history.Memory
	entered, release chan struct{}
}

func (s slowRewind) Rewind(ctx context.Context, id string, at int) (history.Conversation, error) {
	close(s.entered)
	<-s.release
	return s.Memory.Rewind(ctx, id, at)
}

// A rewind holds the conversation's claim while it is made: a turn
// started meanwhile is the one refused (409 naming the holder), not run
// on a conversation changing under it.
func TestATurnStartedWhileARewindIsMadeIs409(t *testing.T) {
	f, id, w := twoTurns(t)
	slow := slowRewind{Memory: f.store, entered: make(chan struct{}), release: make(chan struct{})}
	f.srv.Agent.Store = slow
	type answer struct {
		status int
		body   []byte
	}
	done := make(chan answer, 1)
	go func() {
		status, body := f.do("POST", "/v1/conversations/"+id+"/rewind", `{"at":2}`)
		done <- answer{status, body}
	}()
	<-slow.entered
	status, body := f.do("POST", "/v1/conversations/"+id+"/turns", `{"prompt":"c"}`)
	var h Held
	mustJSON(t, body, &h)
	close(slow.release)
	if status != http.StatusConflict || h.Error.Holder == nil {
		t.Fatalf("a turn started while a rewind is made: %d %s; want 409 naming the rewind's claim", status, body)
	}
	if a := <-done; a.status != http.StatusOK {
		t.Fatalf("the rewind: %d %s", a.status, a.body)
	}
	if got := f.texts(t, id); got != "a|A" {
		t.Fatalf("after the rewind the conversation reads %q; want its first 2 messages alone", got)
	}
	f.turn(t, w, id, "c") // and the next turn runs: the claim was given back
	if got := f.texts(t, id); got != "a|A|c|C" {
		t.Fatalf("after a turn on the rewound conversation it reads %q", got)
	}
}

// A branch's point is where it parts from its conversation, not its
// base_at: a fork rewound to before its own first message leaves a
// branch that shares more of the base than the conversation does.
func TestABranchesPointIsWhereItPartsFromItsConversation(t *testing.T) {
	f, id, _ := twoTurns(t)
	ctx := context.Background()
	status, body := f.do("POST", "/v1/conversations/"+id+"/fork", `{"at":3}`)
	var fork ConversationInfo
	mustJSON(t, body, &fork)
	if status != http.StatusCreated {
		t.Fatalf("fork: %d %s", status, body)
	}
	text := func(s string) history.Message {
		return history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	if err := f.store.Append(ctx, fork.ID, text("x1"), text("x2")); err != nil {
		t.Fatal(err)
	}
	status, body = f.do("POST", "/v1/conversations/"+fork.ID+"/rewind", `{"at":1}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK || rw.Branch.At != 1 || rw.Branch.BaseAt != 3 {
		t.Fatalf("rewind of the fork at 1: %d %s; want its branch parting at 1 (and sharing 3 of the base)", status, body)
	}
	if err := f.store.Append(ctx, fork.ID, text("y1"), text("y2"), text("y3"), text("y4")); err != nil {
		t.Fatal(err)
	}
	status, body = f.do("GET", "/v1/conversations/"+fork.ID+"/branches", "")
	var list struct{ Branches []Branch }
	mustJSON(t, body, &list)
	if status != 200 || len(list.Branches) != 1 || list.Branches[0].At != 1 {
		t.Fatalf("branches of the fork once it grew past the base's point: %d %s; want its branch at 1", status, body)
	}
	if got, kept := f.texts(t, fork.ID), f.texts(t, rw.Branch.ID); got != "a|y1|y2|y3|y4" || kept != "a|A|b|x1|x2" {
		t.Fatalf("the fork reads %q, its branch %q", got, kept)
	}
}

// Through turns, end to end: the agent records what workspace--write did
// on the call's result, and an undo with files through the API puts the
// workspace back as it was before the turn; a redo with files puts the
// turn's files forward again.
func TestUndoWithFilesPutsBackWhatATurnsWriteToolChanged(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "w1", Name: "workspace--write", Input: `{"path":"notes.txt","content":"first"}`}}},
		providertest.Step{Text: "written"},
		providertest.Step{ToolCalls: []providertest.ToolCall{
			{ID: "w2", Name: "workspace--write", Input: `{"path":"notes.txt","content":"second"}`},
			{ID: "w3", Name: "workspace--write", Input: `{"path":"new/made.txt","content":"made"}`},
		}},
		providertest.Step{Text: "rewritten"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.turn(t, w, id, "write notes")
	f.turn(t, w, id, "rewrite them")
	dir := f.srv.Workspace.Dir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return "(none)"
		}
		return string(b)
	}
	if read("notes.txt") != "second" || read("new/made.txt") != "made" {
		t.Fatalf("after the turns: notes.txt %q, new/made.txt %q", read("notes.txt"), read("new/made.txt"))
	}
	status, body := f.do("POST", "/v1/conversations/"+id+"/undo", `{"files":true}`)
	var rw Rewound
	mustJSON(t, body, &rw)
	if status != http.StatusOK || rw.Files == nil || strings.Join(rw.Files.Restored, ",") != "notes.txt" || strings.Join(rw.Files.Removed, ",") != "new/made.txt" {
		t.Fatalf("undo with files: %d %s; want notes.txt restored and new/made.txt removed", status, body)
	}
	if read("notes.txt") != "first" || read("new/made.txt") != "(none)" {
		t.Fatalf("after the undo: notes.txt %q, new/made.txt %q; want %q and none", read("notes.txt"), read("new/made.txt"), "first")
	}
	status, body = f.do("POST", "/v1/conversations/"+id+"/redo", `{"files":true}`)
	var sw Switched
	mustJSON(t, body, &sw)
	if status != http.StatusOK || sw.Files == nil || read("notes.txt") != "second" || read("new/made.txt") != "made" {
		t.Fatalf("redo with files: %d %s; notes.txt %q, new/made.txt %q; want the turn's files back", status, body, read("notes.txt"), read("new/made.txt"))
	}
}
