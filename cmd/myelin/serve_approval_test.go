package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// Issue 28 in serve, end to end through the built binary: the API is the
// permission gate's asker. A call the default policy asks about
// (workspace--write) is an approval event its client decides over the
// API; allowed once, it runs, and the decision is stored with its result
// and served by GET …/messages.
func TestServeAsksItsClientsToApproveACallAndStoresTheDecision(t *testing.T) {
	bin := buildMyelin(t)
	fakeAnthropic(t,
		toolCallStep("toolu_1", "workspace--write", map[string]any{"path": "a.txt", "content": "hi"}),
		providertest.Step{Text: "written"})
	dir := workspaceWith(t, nil)
	s := startServed(t, bin, dir, "--approval-timeout", "2m")
	defer s.stop(t)
	id := s.post(t, "/v1/conversations", "")["id"].(string)
	evs := s.events(t, id)
	s.post(t, "/v1/conversations/"+id+"/turns", `{"prompt":"write it"}`)
	waitFor(t, "the approval event", func() bool { return count(evs(), "approval") == 1 }, s.stderr)
	var ap map[string]any
	for _, e := range evs() {
		if e.typ == "approval" {
			ap = e.data
		}
	}
	if ap["tool"] != "workspace--write" || ap["call_id"] != "toolu_1" || ap["rule"] != "workspace--write" || ap["timeout_ms"] != float64(120000) {
		t.Fatalf("the approval event %v", ap)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	s.post(t, "/v1/conversations/"+id+"/approvals/"+ap["id"].(string), `{"decision":"allow_once"}`)
	waitFor(t, "the turn", func() bool { return count(evs(), "turn.finished") == 1 }, s.stderr)
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("the approved call did not write the file: %q %v", b, err)
	}
	resp, err := http.Get(s.base + "/v1/conversations/" + id + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Messages []struct {
			Message struct {
				Parts []struct {
					Type       string
					CallID     string `json:"call_id"`
					Permission map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	for _, m := range out.Messages {
		for _, p := range m.Message.Parts {
			if p.Type == "tool_result" && p.CallID == "toolu_1" {
				rec = p.Permission
			}
		}
	}
	if rec["decision"] != "allow" || rec["by"] != "person" || rec["answer"] != "allow_once" {
		t.Fatalf("the stored decision %v; the messages: %s", rec, strings.TrimSpace(string(body)))
	}
}
