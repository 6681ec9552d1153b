package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/mcp/mcptest"
	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 16 in serve, end to end through the built binary: an MCP server's
// elicitation is an event the client answers over the API, its sampling
// request goes to the conversation's model (shown as events), and the tool
// it adds with tools/list_changed is offered from the conversation's next
// turn, not the one in flight.
func TestServeAsksItsClientsWhatMCPServersAskAndOffersNewToolsFromTheNextTurn(t *testing.T) {
	bin := buildMyelin(t)
	hs := httptest.NewServer(mcptest.Asker())
	defer hs.Close()
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"url": hs.URL,
		"sampling": map[string]any{"maxRequests": 3, "maxTokens": 1000}}}})
	if err := os.WriteFile(cfg, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := fakeAnthropic(t,
		toolCallStep("toolu_1", "asker--elicit", map[string]any{}),
		toolCallStep("toolu_2", "asker--sample", map[string]any{}),
		providertest.Step{Text: "hi from the model"}, // the sampling request
		toolCallStep("toolu_3", "asker--grow", map[string]any{}),
		providertest.Step{Text: "done"},
		providertest.Step{Text: "second turn"})
	s := startServed(t, bin, workspaceWith(t, nil), "--mcp-config", cfg, "--allow", "asker--*")
	defer s.stop(t)
	id := s.post(t, "/v1/conversations", "")["id"].(string)
	evs := s.events(t, id)
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"who am I?"}`)
	waitFor(t, "the elicitation event", func() bool { return count(evs(), "elicitation") == 1 }, s.stderr)
	var eid string
	for _, e := range evs() {
		if e.typ == "elicitation" {
			eid = e.data["id"].(string)
		}
	}
	s.post(t, "/v1/conversations/"+id+"/elicitations/"+eid, `{"action":"accept","content":{"age":41}}`)
	waitFor(t, "the turn", func() bool { return count(evs(), "turn.finished") == 1 }, s.stderr)
	if got := lastUserText(t, srv, 1); got != `accept {"age":41,"color":"blue","name":"Ann","verified":true}` {
		t.Errorf("the elicit call's result: %q", got)
	}
	if got := lastUserText(t, srv, 3); got != "claude-sonnet-4-5: hi from the model" {
		t.Errorf("the sample call's result: %q", got)
	}
	for _, typ := range []string{"elicitation.answered", "sampling", "sampling.finished"} {
		if count(evs(), typ) != 1 {
			t.Errorf("no %s event", typ)
		}
	}

	// the server lists its tools again after it says they changed, a moment after the call
	waitFor(t, "the new tool to be listed", func() bool {
		resp, err := http.Get(s.base + "/v1/tools")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"asker--grown"`)
	}, s.stderr)
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"again"}`)
	waitFor(t, "the second turn", func() bool { return count(evs(), "turn.finished") == 2 }, s.stderr)
	tools := func(i int) []string {
		var names []string
		for _, d := range srv.Request(i)["tools"].([]any) {
			names = append(names, d.(map[string]any)["name"].(string))
		}
		return names
	}
	if slices.Contains(tools(4), "asker--grown") || !slices.Contains(tools(5), "asker--grown") {
		t.Errorf("the turn in flight offered %v, the next %v: the new tool belongs to the next only", tools(4), tools(5))
	}
	if !strings.Contains(s.stderr.String(), "MCP server asker asks the model to complete") {
		t.Errorf("the sampling request is not on stderr: %s", s.stderr.String())
	}
}
