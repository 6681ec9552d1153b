package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A request's msg is the number GET …/messages gives its answer (from 1),
// though the store keeps the answer's place (from 0); a request that
// produced no answer has no msg at all, not -1.
func TestARequestsMsgIsItsAnswersNumberInMessages(t *testing.T) {
	f := newFixture(t,
		providertest.Step{Text: "Let me look.", ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "noop--run", Input: `{}`}}},
		providertest.Step{Text: "done"},
	)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go")
	w.until(t, EventTurnFinished)
	// a request refused as too long, as the agent keeps it
	if _, err := f.store.AddRequest(context.Background(), id, history.SentRequest{Msg: -1, Wire: "anthropic", Body: []byte(`{}`), Error: "too long"}); err != nil {
		t.Fatal(err)
	}

	_, body := f.do("GET", "/v1/conversations/"+id+"/messages", "")
	var msgs struct {
		Messages []struct {
			N       int `json:"n"`
			Message struct {
				Role  string `json:"role"`
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"messages"`
	}
	mustJSON(t, body, &msgs)
	answer := map[int]string{} // n -> the answer's text
	for _, m := range msgs.Messages {
		if m.Message.Role == "assistant" && len(m.Message.Parts) > 0 {
			answer[m.N] = m.Message.Parts[0].Text
		}
	}

	status, body := f.do("GET", "/v1/conversations/"+id+"/requests", "")
	var list struct {
		Requests []map[string]json.RawMessage `json:"requests"`
	}
	mustJSON(t, body, &list)
	if status != 200 || len(list.Requests) != 3 {
		t.Fatalf("requests: %d %s", status, body)
	}
	for i, want := range []string{"Let me look.", "done"} {
		var n int
		if err := json.Unmarshal(list.Requests[i]["msg"], &n); err != nil {
			t.Fatalf("request %d has no msg: %s", i+1, body)
		}
		if answer[n] != want {
			t.Fatalf("request %d's msg is %d, which /messages gives as %q, not its answer %q (answers: %v)", i+1, n, answer[n], want, answer)
		}
		// the one request's answer says the same
		_, one := f.do("GET", "/v1/conversations/"+id+"/requests/"+string(list.Requests[i]["n"]), "")
		var info RequestInfo
		mustJSON(t, one, &info)
		if info.Msg != n {
			t.Fatalf("GET …/requests/%d says msg %d, the list %d", i+1, info.Msg, n)
		}
	}
	if v, ok := list.Requests[2]["msg"]; ok {
		t.Fatalf("the request that produced no answer has msg %s; it should have none: %s", v, body)
	}
}
