package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestThinkingFlagsThatTheAPIWouldRefuseAreUsageErrors(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--thinking", "lots"}, `--thinking "lots": give a budget in tokens (at least 1024, less than --max-tokens) or adaptive`},
		{[]string{"--thinking", "1000"}, "--thinking 1000: the budget is in tokens, at least 1024"},
		{[]string{"--thinking", "8192"}, "--thinking 8192 is not less than --max-tokens 8192"},
		{[]string{"--thinking", "5000", "--max-tokens", "4096"}, "--thinking 5000 is not less than --max-tokens 4096"},
		{[]string{"--interleaved-thinking"}, "--interleaved-thinking asks for --thinking BUDGET too"},
		{[]string{"--thinking", "adaptive", "--interleaved-thinking"}, "adaptive thinking thinks between tool calls without it"},
	} {
		args := append([]string{"run", "--workspace", dir}, c.args...)
		_, errOut, code := cli(t, append(args, "hello")...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	// a wire without a thinking setting says so
	t.Setenv("OPENAI_API_KEY", "k")
	if _, errOut, code := cli(t, "run", "--workspace", dir, "--provider", "openai", "--thinking", "2048", "hello"); code != 1 || !strings.Contains(errOut, "the openai wire has no thinking budget") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestThinkingIsAskedForAndShownOnStderrOnlyWithShowThinking(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	steps := func() []providertest.Step {
		return []providertest.Step{
			{Thinking: []providertest.Thinking{{Text: "I should read a.txt.", Signature: "sig1"}, {Redacted: "RED"}}, Text: "Reading.", ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
			{Thinking: []providertest.Thinking{{Text: "It says alpha.", Signature: "sig2"}}, Text: "alpha"},
		}
	}
	for _, show := range []bool{false, true} {
		srv := fakeAnthropic(t, steps()...)
		srv.CheckThinking = true
		args := []string{"run", "--workspace", dir, "--thinking", "2048"}
		if show {
			args = append(args, "--show-thinking")
		}
		out, errOut, code := cli(t, append(args, "what does a.txt say?")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if out != "Reading.\nalpha\n" {
			t.Fatalf("stdout %q: thinking must never reach it", out)
		}
		if th := srv.Request(0)["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != 2048.0 {
			t.Fatalf("thinking sent %v", th)
		}
		shown := strings.Contains(errOut, "[thinking] I should read a.txt.\n") && strings.Contains(errOut, "[thinking] It says alpha.\n")
		if shown != show || (!show && strings.Contains(errOut, "should read")) {
			t.Fatalf("--show-thinking %v: stderr %q", show, errOut)
		}
		if show {
			// history show marks it, in its place
			shownHistory, _, code := cli(t, "history", "show", conversationID(t, errOut), "--workspace", dir)
			if code != 0 {
				t.Fatalf("history show: exit %d", code)
			}
			want := "[thinking] I should read a.txt.\n[redacted thinking]\nReading.\n[tool call toolu_1]"
			if !strings.Contains(shownHistory, want) || !strings.Contains(shownHistory, "[thinking] It says alpha.\nalpha\n") || strings.Contains(shownHistory, "sig1") {
				t.Fatalf("history show:\n%s", shownHistory)
			}
		}
	}
}

func TestAdaptiveThinkingIsSentAsTheAPITakesIt(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeAnthropic(t, providertest.Step{Text: "ok"})
	if _, errOut, code := cli(t, "run", "--workspace", dir, "--thinking", "adaptive", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if th := srv.Request(0)["thinking"].(map[string]any); len(th) != 1 || th["type"] != "adaptive" {
		t.Fatalf("thinking sent %v", th)
	}
}

func TestHistoryShowMarksEachKindOfReasoning(t *testing.T) {
	for _, c := range []struct {
		part history.Part
		want string
	}{
		{history.Part{Type: history.ReasoningPart, Wire: "anthropic", Text: "Let me see.", Raw: json.RawMessage(`{"type":"thinking","thinking":"Let me see.","signature":"s"}`)}, "[thinking] Let me see."},
		{history.Part{Type: history.ReasoningPart, Wire: "anthropic", Raw: json.RawMessage(`{"type":"redacted_thinking","data":"xyz"}`)}, "[redacted thinking]"},
		{history.Part{Type: history.ReasoningPart, Wire: "anthropic", Raw: json.RawMessage(`{"type":"thinking","thinking":"","signature":"s"}`)}, "[thinking omitted by the provider; 49 bytes kept to send back]"},
		{history.Part{Type: history.ReasoningPart, Wire: "gemini", Text: "A thought."}, "[reasoning, gemini] A thought."},
	} {
		var b strings.Builder
		showMessages(&b, []history.Message{{Role: history.Assistant, Parts: []history.Part{c.part}}})
		if _, body, _ := strings.Cut(b.String(), "\n"); body != c.want+"\n" {
			t.Errorf("%+v shows %q, want %q", c.part, body, c.want)
		}
	}
}
