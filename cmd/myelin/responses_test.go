package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

func TestRunOverTheResponsesWire(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := providertest.NewResponses(t,
		providertest.Step{Reasoning: "read it", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--provider", "openai-responses", "--workspace", dir, "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	first, second := srv.Request(0), srv.Request(1)
	items := second["input"].([]any)
	last := items[len(items)-1].(map[string]any)
	if last["type"] != "function_call_output" || last["output"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("tool output %v", last)
	}
	if items[1].(map[string]any)["type"] != "reasoning" || first["model"] != "gpt-5-mini" || first["store"] != false {
		t.Fatalf("first request %v; second's items %v", first, items)
	}
	if key := first["prompt_cache_key"]; key == nil || key != second["prompt_cache_key"] || !strings.Contains(errOut, key.(string)) {
		t.Fatalf("prompt_cache_key %v then %v; stderr %q", key, second["prompt_cache_key"], errOut)
	}
}

func TestAnUnknownProviderNamesTheWires(t *testing.T) {
	_, errOut, code := cli(t, "run", "--provider", "gemini-x", "--workspace", workspaceWith(t, nil), "hi")
	if code == 0 || !strings.Contains(errOut, "want anthropic, openai, openai-responses, gemini, bedrock, vertex or google-cloud") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
