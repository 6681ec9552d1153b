package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	if want := "/model/global.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"; srv.Paths()[0] != want {
		t.Fatalf("path %s, want %s", srv.Paths()[0], want)
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
	if code == 0 || !strings.Contains(errOut, "want anthropic, openai, openai-responses, gemini, bedrock, vertex or google-cloud") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// adcFile writes application default credentials — a service account
// whose token endpoint is a loopback server of the test's — and returns
// the file's path and how many tokens were handed out.
func adcFile(t *testing.T, project string) (string, *atomic.Int32) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var tokens atomic.Int32
	tokenServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.FormValue("assertion") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		tokens.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"ya29.from-adc","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokenServer.Close)
	creds, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "myelin-test@" + project + ".iam.gserviceaccount.com", "client_id": "1",
		"token_uri": tokenServer.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &tokens
}

func TestRunOnVertexWithApplicationDefaultCredentials(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		t.Setenv(k, "")
	}
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	srv := providertest.NewVertex(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}},
		providertest.Step{Text: "alpha it is"})
	path, tokens := adcFile(t, "adc-project")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	t.Setenv("CLOUD_ML_REGION", "us-east5")
	t.Setenv("ANTHROPIC_VERTEX_BASE_URL", srv.URL+"/")
	out, errOut, code := cli(t, "run", "--provider", "vertex", "--workspace", dir, "read a.txt")
	if code != 0 || out != "alpha it is\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if tokens.Load() == 0 {
		t.Fatal("no token was asked of the credentials' token endpoint")
	}
	if want := "/v1/projects/adc-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"; srv.Paths()[0] != want {
		t.Fatalf("path %s, want %s", srv.Paths()[0], want)
	}
	req := srv.Request(1)
	if req["anthropic_version"] != "vertex-2023-10-16" || req["model"] != nil || req["stream"] != true {
		t.Fatalf("body %v", req)
	}
	msgs := req["messages"].([]any)
	res := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if res["type"] != "tool_result" || res["content"] != "     1\talpha\n[lines 1-1 of 1 in a.txt; end of file]" {
		t.Fatalf("tool result %v", res)
	}
}

func TestThinkingIsAskedForOnBedrockAsOnTheAPI(t *testing.T) {
	awsOnly(t)
	dir := workspaceWith(t, nil)
	srv := providertest.NewBedrock(t, providertest.Step{Text: "thought it over"})
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCLI")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("ANTHROPIC_BEDROCK_BASE_URL", srv.URL)
	out, errOut, code := cli(t, "run", "--provider", "bedrock", "--thinking", "2048", "--workspace", dir, "think")
	if code != 0 || out != "thought it over\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	th, _ := srv.Request(0)["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(2048) {
		t.Fatalf("the request's thinking is %v; want enabled with a budget of 2048", srv.Request(0)["thinking"])
	}
}
