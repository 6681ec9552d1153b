package main

import (
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// awsOnly keeps the AWS configuration to what the test sets: no shared
// files, no instance metadata, no first-party keys.
func awsOnly(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestRunOnBedrockWithTheUsualAWSVariables(t *testing.T) {
	awsOnly(t)
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := providertest.NewBedrock(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCLI")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("ANTHROPIC_BEDROCK_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--provider", "bedrock", "--workspace", dir, "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	req := srv.Request(1)
	if req["anthropic_version"] != "bedrock-2023-05-31" || req["model"] != nil {
		t.Fatalf("body %v", req)
	}
	msgs := req["messages"].([]any)
	res := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if res["type"] != "tool_result" || res["content"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("tool result %v", res)
	}
}

func TestThePlatformsSayWhatToSet(t *testing.T) {
	awsOnly(t)
	dir := workspaceWith(t, nil)
	t.Setenv("AWS_REGION", "")
	_, errOut, code := cli(t, "run", "--provider", "bedrock", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "set AWS_REGION") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Setenv("CLOUD_ML_REGION", "")
	_, errOut, code = cli(t, "run", "--provider", "vertex", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "set CLOUD_ML_REGION") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = cli(t, "run", "--provider", "azure", "--workspace", dir, "hello")
	if code == 0 || !strings.Contains(errOut, "want anthropic, openai, bedrock or vertex") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
