package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// oddText is what the odd--run tool returns: invalid UTF-8 (repaired once,
// at conversion), the line and paragraph separators, HTML's specials and a
// carriage return.
const oddText = "bad \xff\xfe byte; \u2028line\u2029para; <b>&amp;</b>; cr \r; end"

// A tool's text is the same string wherever it is served: the event the
// model saw it in, the stored record, and a direct call — repaired once,
// never escaped or converted again.
func TestATextIsServedAsItselfByTheEventTheMessagesAndTheToolCall(t *testing.T) {
	f := newFixture(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "odd--run", Input: `{}`}}},
		providertest.Step{Text: "said \u2028 <&>"},
	)
	if err := f.srv.Agent.Tools.Add(tool.MustFunc("odd--run", "Odd text.", func(context.Context, struct{}) (any, error) { return oddText, nil })); err != nil {
		t.Fatal(err)
	}
	want := result.WellFormed(oddText)
	id := f.newConversation()
	w := f.watch(id)
	f.startTurn(id, "go \u2028 <&>")
	var fromEvent, started string
	for _, ev := range w.until(t, EventTurnFinished) {
		switch ev.Type {
		case EventToolFinished:
			var tf toolFinishedEvent
			mustJSON(t, ev.Data, &tf)
			fromEvent = tf.Text
		case EventTurnStarted:
			var ts turnStartedEvent
			mustJSON(t, ev.Data, &ts)
			started = ts.Prompt
		}
		if strings.Contains(string(ev.Data), `\u003c`) {
			t.Errorf("event %s is HTML-escaped: %s", ev.Type, ev.Data)
		}
	}
	if fromEvent != want || started != "go \u2028 <&>" {
		t.Fatalf("tool.finished text %q, prompt %q; want %q", fromEvent, started, want)
	}

	stored, err := f.store.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	status, body := f.do("GET", "/v1/conversations/"+id+"/messages", "")
	var out struct {
		Messages []StoredMessage `json:"messages"`
	}
	mustJSON(t, body, &out)
	if status != 200 || len(out.Messages) != len(stored) {
		t.Fatalf("messages: %d, %d of %d", status, len(out.Messages), len(stored))
	}
	var fromMessages string
	for i, m := range out.Messages {
		raw, _ := result.JSON(stored[i])
		if string(m.Message) != string(raw) {
			t.Fatalf("message %d served as\n%s\nstored as\n%s", i+1, m.Message, raw)
		}
		var hm history.Message
		mustJSON(t, m.Message, &hm)
		for _, p := range hm.Parts {
			if p.Type == history.ToolResultPart {
				fromMessages = p.Text
			}
		}
	}
	if fromMessages != want {
		t.Fatalf("the stored tool result %q; want %q", fromMessages, want)
	}

	status, body = f.do("POST", "/v1/tools/odd--run/call", "{}")
	var o ToolOutput
	mustJSON(t, body, &o)
	if status != 200 || o.Text != want {
		t.Fatalf("a direct call: %d %q; want %q", status, o.Text, want)
	}
	if strings.Contains(string(body), `\u003c`) || !json.Valid(body) {
		t.Fatalf("a direct call's answer is escaped or not JSON: %s", body)
	}
	_ = fmt.Sprint
}
