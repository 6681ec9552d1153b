package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/delegate"
	"github.com/myelin-run/myelin/provider/providertest"
)

// withDelegate offers agent--delegate (the real one, over the fixture's
// agent) in the fixture's turns, as `myelin serve --delegate` does.
func (f *fixture) withDelegate() {
	f.t.Helper()
	d := &delegate.Delegate{Agent: f.srv.Agent}
	if err := f.srv.Agent.Tools.Add(d.Tool()); err != nil {
		f.t.Fatal(err)
	}
}

// delegated is a fixture offering agent--delegate and the id of a
// conversation whose one turn has run: its call c_del delegated, the
// child answered "the child's report: 3 files", and the parent answered.
func delegated(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t,
		providertest.Step{Text: "Handing it over.", ToolCalls: []providertest.ToolCall{
			{ID: "c_del", Name: delegate.Name, Input: `{"task":"count the files","tools":[]}`},
		}},
		providertest.Step{Text: "the child's report: 3 files"},
		providertest.Step{Text: "The subagent counted 3."},
	)
	f.withDelegate()
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "delegate the count")
	w.until(t, EventTurnFinished)
	return f, id
}

// A conversation whose call delegated lists the child that call started,
// with the call's id; the child's record names its parent and that call;
// an id not in the store is a 404, as everywhere else.
func TestChildrenListsTheSubagentAConversationsCallStarted(t *testing.T) {
	f, id := delegated(t)

	status, body := f.do("GET", "/v1/conversations/"+id+"/children", "")
	if status != http.StatusOK {
		t.Fatalf("children: %d %s", status, body)
	}
	var out struct {
		Children []ConversationInfo `json:"children"`
	}
	mustJSON(t, body, &out)
	if len(out.Children) != 1 {
		t.Fatalf("children of %s: %s", id, body)
	}
	kid := out.Children[0]
	if kid.Parent != id || kid.ParentCall != "c_del" || kid.ID == "" || kid.Messages != 2 {
		t.Fatalf("the child as listed: %+v", kid)
	}

	status, body = f.do("GET", "/v1/conversations/"+kid.ID, "")
	var got ConversationInfo
	mustJSON(t, body, &got)
	if status != http.StatusOK || got.Parent != id || got.ParentCall != "c_del" {
		t.Fatalf("GET the child: %d %s", status, body)
	}
	for _, field := range []string{`"parent":` + quote(id), `"parent_call":"c_del"`} {
		if !strings.Contains(string(body), field) {
			t.Fatalf("the child's record lacks %s: %s", field, body)
		}
	}
	// the child has no children; the parent, no parent
	status, body = f.do("GET", "/v1/conversations/"+kid.ID+"/children", "")
	if status != http.StatusOK || string(body) != `{"children":[]}`+"\n" {
		t.Fatalf("the child's children: %d %s", status, body)
	}
	_, body = f.do("GET", "/v1/conversations/"+id, "")
	if strings.Contains(string(body), `"parent`) {
		t.Fatalf("the parent's record names a parent: %s", body)
	}

	status, body = f.do("GET", "/v1/conversations/nope/children", "")
	if status != http.StatusNotFound || !strings.Contains(string(body), `no conversation \"nope\"`) {
		t.Fatalf("children of an unknown id: %d %s", status, body)
	}
}
