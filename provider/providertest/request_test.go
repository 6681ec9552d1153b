package providertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestRespondAnswersWhatTheScriptHasNoStepFor(t *testing.T) {
	for _, name := range wires {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, name, providertest.Step{Text: "scripted"})
			var mu sync.Mutex
			var got []providertest.Request
			srv.Respond = func(r providertest.Request) providertest.Step {
				mu.Lock()
				got = append(got, r)
				mu.Unlock()
				if strings.HasPrefix(r.LastUserText(), "Summarise the conversation") {
					return providertest.Step{Text: "SUMMARY"}
				}
				return providertest.Step{Text: fmt.Sprintf("round %d, %d messages", r.Index, len(r.Messages))}
			}
			p := wire(t, name, srv)
			summary := conversation(1, "S.")
			summary.Messages = append(summary.Messages, text(history.Assistant, "ok"), text(history.User, "Summarise the conversation so far."))
			var answers []string
			for _, req := range []provider.Request{conversation(0, "S."), conversation(1, "S."), summary, conversation(2, "S.")} {
				resp, err := p.Complete(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				answers = append(answers, resp.Message.Parts[0].Text)
			}
			system := 0
			if name == "openai" {
				system = 1 // the system prompt is a message there
			}
			want := []string{"scripted", fmt.Sprintf("round 1, %d messages", 3+system), "SUMMARY", fmt.Sprintf("round 3, %d messages", 5+system)}
			if fmt.Sprint(answers) != fmt.Sprint(want) {
				t.Fatalf("answers %q\nwant    %q", answers, want)
			}
			sent := srv.Requests()
			for _, r := range got {
				if string(r.Body) != string(sent[r.Index]) || r.Tokens != providertest.Tokens(sent[r.Index]) || r.MaxTokens != 500 {
					t.Fatalf("Respond was given request %d as %d bytes, %d tokens, max_tokens %d; want the body sent, %d tokens, 500",
						r.Index, len(r.Body), r.Tokens, r.MaxTokens, providertest.Tokens(sent[r.Index]))
				}
			}
			if len(got) != 3 {
				t.Fatalf("Respond was called %d times, want 3", len(got))
			}
		})
	}
}

func TestWithoutRespondAnExhaustedScriptIsAnError(t *testing.T) {
	srv := providertest.NewAnthropic(t)
	if _, err := wire(t, "anthropic", srv).Complete(context.Background(), conversation(0, "S."), nil); err == nil || !strings.Contains(err.Error(), "no more steps") {
		t.Fatalf("got %v, want the script's end", err)
	}
}

func TestLastUserTextIsTheTextOfTheLastUserMessage(t *testing.T) {
	tests := []struct {
		name, messages, want string
	}{
		{"string content", `[{"role":"user","content":"hello"}]`, "hello"},
		{"the last of several", `[{"role":"user","content":"one"},{"role":"assistant","content":"a"},{"role":"user","content":"two"}]`, "two"},
		{"anthropic text blocks joined",
			`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}]`, "a\nb"},
		{"anthropic tool results are not text",
			`[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"out"}]}]`, ""},
		{"openai tool messages are skipped",
			`[{"role":"system","content":"s"},{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[]},{"role":"tool","tool_call_id":"1","content":"out"}]`, "go"},
		{"openai content parts", `[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:"}}]}]`, "look"},
		{"no user message", `[{"role":"system","content":"s"}]`, ""},
		{"no messages", `[]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []any
			if err := json.Unmarshal([]byte(tc.messages), &msgs); err != nil {
				t.Fatal(err)
			}
			if got := (providertest.Request{Messages: msgs}).LastUserText(); got != tc.want {
				t.Fatalf("LastUserText() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestForgetDropsTheBodiesKeptAndCountsAgainFromNone(t *testing.T) {
	srv := newServer(t, "anthropic", providertest.Step{Text: "one"}, providertest.Step{Text: "two"})
	var index []int
	srv.Respond = func(r providertest.Request) providertest.Step {
		index = append(index, r.Index)
		return providertest.Step{Text: "more"}
	}
	p := wire(t, "anthropic", srv)
	for range 3 {
		if _, err := p.Complete(context.Background(), conversation(0, "S."), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv.Forget()
	if n, m := len(srv.Requests()), len(srv.Paths()); n != 0 || m != 0 {
		t.Fatalf("after Forget the fake keeps %d bodies and %d paths, want none", n, m)
	}
	if _, err := p.Complete(context.Background(), conversation(0, "S."), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1 || fmt.Sprint(index) != "[2 0]" {
		t.Fatalf("after one more request the fake keeps %d bodies and Respond saw indexes %v; want 1 and [2 0]", n, index)
	}
}
