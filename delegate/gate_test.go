package delegate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider/providertest"
)

// A subagent's calls are checked by its parent's gate: a write the
// policy denies is not run in the child either, and the child's history
// stores the decision with the call.
func TestASubagentsCallsAreCheckedByItsParentsGate(t *testing.T) {
	r := newRig(t, Limits{})
	allow, err := permission.ParseRule(Name, permission.Allow, "--allow")
	if err != nil {
		t.Fatal(err)
	}
	deny, err := permission.ParseRule("workspace--write", permission.Deny, "--deny")
	if err != nil {
		t.Fatal(err)
	}
	r.agent.Gate = &approval.Gate{Policy: &permission.Policy{User: []permission.Rule{allow, deny}}}
	var childRounds atomic.Int32
	r.child = func(task string, req providertest.Request) providertest.Step {
		if childRounds.Add(1) == 1 {
			return providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "w1", Name: "workspace--write", Input: `{"path":"child.txt","content":"x"}`}}}
		}
		return providertest.Step{Text: "could not write"}
	}
	r.parent = []providertest.Step{delegating("write child.txt"), {Text: "done"}}
	r.turn("go")
	if _, err := os.Stat(filepath.Join(r.dir, "child.txt")); err == nil {
		t.Fatal("the child's denied write ran")
	}
	if p := r.results()["call_1"].Permission; p == nil || p.Decision != "allow" || p.By != "rule" {
		t.Errorf("the parent's delegate call's record %+v, want allowed by its rule", p)
	}
	kids := r.children()
	if len(kids) != 1 {
		t.Fatalf("%d children, want 1", len(kids))
	}
	msgs, err := r.store.Messages(context.Background(), kids[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var res *history.Part
	for _, m := range msgs {
		for i, p := range m.Parts {
			if p.Type == history.ToolResultPart && p.CallID == "w1" {
				res = &m.Parts[i]
			}
		}
	}
	if res == nil || !res.IsError || !strings.Contains(res.Text, "denied") || res.Permission == nil || res.Permission.Decision != "deny" || res.Permission.By != "rule" {
		t.Fatalf("the child's write result %+v, want denied by the rule, with its record", res)
	}
}
