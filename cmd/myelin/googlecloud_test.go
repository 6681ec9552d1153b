package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// googleCloudOnly keeps the gateway's configuration to what the test sets.
func googleCloudOnly(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_GOOGLE_CLOUD_PROJECT", "ANTHROPIC_GOOGLE_CLOUD_LOCATION", "ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID", "ANTHROPIC_GOOGLE_CLOUD_BASE_URL", "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		t.Setenv(k, "")
	}
}

func TestRunThroughTheGoogleCloudGatewayWithApplicationDefaultCredentials(t *testing.T) {
	googleCloudOnly(t)
	// a first-party key in the environment is not used (the fake refuses an x-api-key)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-the-gateway")
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := providertest.NewGoogleCloud(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	path, tokens := adcFile(t, "adc-project")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	t.Setenv("ANTHROPIC_GOOGLE_CLOUD_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--provider", "google-cloud", "--workspace", dir, "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if tokens.Load() == 0 {
		t.Fatal("no token was asked of the credentials' token endpoint")
	}
	if want := providertest.GoogleCloudPath + "v1/messages"; srv.Paths()[0] != want {
		t.Fatalf("path %s, want %s", srv.Paths()[0], want)
	}
	// the first-party body: the model in it, Anthropic's name for it
	req := srv.Request(1)
	if req["model"] != "claude-sonnet-4-5" || req["anthropic_version"] != nil || req["stream"] != true {
		t.Fatalf("body %v", req)
	}
	msgs := req["messages"].([]any)
	res := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if res["type"] != "tool_result" || res["content"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("tool result %v", res)
	}
}

func TestTheGoogleCloudGatewaySaysWhatToSet(t *testing.T) {
	googleCloudOnly(t)
	dir := workspaceWith(t, nil)
	path, _ := adcFile(t, "adc-project")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	_, errOut, code := cli(t, "run", "--provider", "google-cloud", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "set ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", dir+"/missing.json")
	t.Setenv("ANTHROPIC_GOOGLE_CLOUD_WORKSPACE_ID", "wrkspc_1")
	_, errOut, code = cli(t, "run", "--provider", "google-cloud", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "google-cloud: no Google credentials") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestThinkingIsAskedForThroughTheGoogleCloudGateway(t *testing.T) {
	googleCloudOnly(t)
	dir := workspaceWith(t, nil)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "thought it over"})
	path, _ := adcFile(t, "adc-project")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	t.Setenv("ANTHROPIC_GOOGLE_CLOUD_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--provider", "google-cloud", "--thinking", "2048", "--workspace", dir, "think")
	if code != 0 || out != "thought it over\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	th, _ := srv.Request(0)["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(2048) {
		t.Fatalf("the request's thinking is %v; want enabled with a budget of 2048", srv.Request(0)["thinking"])
	}
}
