package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// fakeGemini points the CLI at a scripted Gemini server, with only a
// Gemini key set.
func fakeGemini(t *testing.T, steps ...providertest.Step) *providertest.Server {
	t.Helper()
	srv := providertest.NewGemini(t, steps...)
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "k")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
	return srv
}

func TestRunOverTheGeminiWire(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := fakeGemini(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	out, errOut, code := cli(t, "run", "--provider", "gemini", "--workspace", dir, "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	contents := srv.Request(1)["contents"].([]any)
	parts := contents[len(contents)-1].(map[string]any)["parts"].([]any)
	fr := parts[0].(map[string]any)["functionResponse"].(map[string]any)
	if fr["response"].(map[string]any)["output"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("function response %v", fr)
	}
}

func TestRunPicksGeminiWhenOnlyItsKeyIsSet(t *testing.T) {
	dir := workspaceWith(t, nil)
	srv := fakeGemini(t, providertest.Step{Text: "hi"})
	out, errOut, code := cli(t, "run", "--workspace", dir, "hello")
	if code != 0 || out != "hi\n" || len(srv.Requests()) != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Setenv("GEMINI_API_KEY", "")
	_, errOut, code = cli(t, "run", "--provider", "gemini", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "set GEMINI_API_KEY (or GOOGLE_API_KEY)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestThinkingOnAWireChosenByItsKeyNamesThatWire(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "k")
	_, errOut, code := cli(t, "run", "--thinking", "2048", "--workspace", workspaceWith(t, nil), "hi")
	if code == 0 || !strings.Contains(errOut, "the gemini wire has no thinking budget") {
		t.Fatalf("exit %d, stderr %q; want the error to name the gemini wire the key chose", code, errOut)
	}
}
