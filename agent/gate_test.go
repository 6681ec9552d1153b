package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/tool"
)

// countingAsker answers every request with one choice and counts them.
type countingAsker struct {
	choice approval.Choice
	asked  atomic.Int32
}

func (c *countingAsker) Ask(context.Context, approval.Request) (approval.Answer, error) {
	c.asked.Add(1)
	return approval.Answer{Choice: c.choice}, nil
}

func denyRule(t *testing.T, text string) *permission.Policy {
	t.Helper()
	r, err := permission.ParseRule(text, permission.Deny, "--deny")
	if err != nil {
		t.Fatal(err)
	}
	return &permission.Policy{User: []permission.Rule{r}}
}

// Under a gate, a denied call is not run and its result says so; every
// result is stored with its call's record, which a restarted process
// reads back; and no wire sends the record: the requests are the bytes
// they are without a gate.
func TestAGatedTurnStoresEachDecisionAndSendsNoneOfIt(t *testing.T) {
	for _, wire := range wires() {
		t.Run(wire, func(t *testing.T) {
			calls := []providertest.ToolCall{readCall("toolu_1", "a.txt"),
				{ID: "toolu_2", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}}
			gated := newWireRig(t, wire)
			gated.write("a.txt", "alpha\n")
			gated.agent.Gate = &approval.Gate{Policy: denyRule(t, "workspace--write")}
			gated.srv.Push(providertest.Step{ToolCalls: calls}, providertest.Step{Text: "done"})
			gated.turn("go")
			if _, err := os.Stat(filepath.Join(gated.dir, "w.txt")); err == nil {
				t.Fatal("the denied write ran")
			}
			msgs, err := gated.newAgent().Store.Messages(context.Background(), gated.id)
			if err != nil {
				t.Fatal(err)
			}
			results := msgs[len(msgs)-2].Parts
			if len(results) != 2 || results[0].Permission == nil || results[1].Permission == nil {
				t.Fatalf("stored results %+v: want both with a record", results)
			}
			read, write := *results[0].Permission, *results[1].Permission
			if read.Decision != "allow" || read.By != "default" || read.At.IsZero() {
				t.Errorf("the read's record %+v, want allowed by default", read)
			}
			if write.Decision != "deny" || write.By != "rule" || !strings.HasPrefix(write.Rule, "deny workspace--write") {
				t.Errorf("the write's record %+v, want denied by its rule", write)
			}
			if !results[1].IsError || !strings.Contains(results[1].Text, "denied") {
				t.Errorf("the denied call's result %q does not say it was denied", results[1].Text)
			}
			// the next request as built from the store, and the same with
			// the records taken out: one wire body
			ctx := context.Background()
			req, err := gated.newAgent().Request(ctx, gated.id)
			if err != nil {
				t.Fatal(err)
			}
			bare := req
			bare.Messages = make([]history.Message, len(req.Messages))
			recorded := 0
			for i, m := range req.Messages {
				m.Parts = append([]history.Part(nil), m.Parts...)
				for j := range m.Parts {
					if m.Parts[j].Permission != nil {
						recorded++
					}
					m.Parts[j].Permission = nil
				}
				bare.Messages[i] = m
			}
			if recorded != 2 {
				t.Fatalf("the request's messages hold %d records, want the 2 stored", recorded)
			}
			var bodies [][]byte
			for _, q := range []any{req, bare} {
				gated.srv.Push(providertest.Step{Text: "x"})
				if _, err := gated.agent.Provider.Complete(ctx, q.(provider.Request), nil); err != nil {
					t.Fatal(err)
				}
				all := gated.srv.Requests()
				bodies = append(bodies, all[len(all)-1])
			}
			if !bytes.Equal(bodies[0], bodies[1]) {
				t.Fatalf("the request with records differs from the one without:\n%s\n%s", bodies[0], bodies[1])
			}
			if bytes.Contains(bodies[0], []byte("allowed by default")) {
				t.Fatal("the request holds a permission record's reason")
			}
			if !bytes.Contains(bodies[0], []byte("denied")) {
				t.Fatal("the request does not hold the denied call's result")
			}
		})
	}
}

// A subagent's turn — an agent with no gate of its own, run under a
// call of a gated turn — is checked by the gate on its context.
func TestAnAgentWithoutAGateTakesTheOneOnItsContext(t *testing.T) {
	r := newRig(t)
	r.agent.Gate = nil
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--write", Input: `{"path":"w.txt","content":"x"}`}}}, providertest.Step{Text: "done"})
	ctx := tool.WithGate(context.Background(), &approval.Gate{Policy: denyRule(t, "workspace--write")})
	if _, err := r.agent.Turn(ctx, r.id, "go", func(Event) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "w.txt")); err == nil {
		t.Fatal("the write ran: the gate on the context was not asked")
	}
	msgs, _ := r.agent.Store.Messages(context.Background(), r.id)
	if p := msgs[len(msgs)-2].Parts[0].Permission; p == nil || p.Decision != "deny" {
		t.Fatalf("the call's record %+v, want a denial", p)
	}
}

// At recovery, a call of a tool that may run again is run again only
// when the gate allows it without asking: one the policy asks about —
// it was waiting for a person when the process stopped, or would have —
// is answered as interrupted, never run, and no one is asked; a call of
// a tool that may not run again is answered as interrupted as ever.
func TestRecoveryRunsAgainOnlyWhatTheGateAllowsWithoutAsking(t *testing.T) {
	var looks, peeks, acts atomic.Int32
	look := counting("count--look", true, &looks)
	look.ReadOnly = true
	peek := counting("count--peek", true, &peeks) // may run again, but not read-only: asked by default
	act := counting("count--act", false, &acts)
	r := newRig(t, look, peek, act)
	crashedRound(t, r.agent.Store, r.id, []history.Part{
		callPart("look", "count--look", `{"key":"a"}`),
		callPart("peek", "count--peek", `{"key":"b"}`),
		callPart("act", "count--act", `{"key":"c"}`),
	})
	asker := &countingAsker{choice: approval.AllowOnce}
	a := r.newAgent(look, peek, act)
	a.Gate = &approval.Gate{Asker: asker}
	rec, err := a.Recover(context.Background(), r.id)
	if err != nil || rec != (Recovery{Rerun: 1, Interrupted: 2}) {
		t.Fatalf("Recover = %+v, %v; want 1 run again, 2 interrupted", rec, err)
	}
	if looks.Load() != 1 || peeks.Load() != 0 || acts.Load() != 0 {
		t.Fatalf("runs: look %d, peek %d, act %d; want only look's", looks.Load(), peeks.Load(), acts.Load())
	}
	if asker.asked.Load() != 0 {
		t.Fatalf("a person was asked %d times during a recovery", asker.asked.Load())
	}
	msgs, _ := a.Store.Messages(context.Background(), r.id)
	parts := msgs[len(msgs)-1].Parts
	if p := parts[0].Permission; parts[0].IsError || p == nil || p.Decision != "allow" || p.By != "default" {
		t.Errorf("the call run again: %+v (record %+v), want its result with an allow by default", parts[0], p)
	}
	if p := parts[1].Permission; !parts[1].IsError || !strings.HasPrefix(parts[1].Text, Interrupted+": its tool may run again, but the permission policy does not allow it without asking") || p == nil || p.By != "nobody" {
		t.Errorf("the call that would be asked: %q (record %+v), want interrupted, saying why", parts[1].Text, p)
	}
	if parts[2].Text != Interrupted || parts[2].Permission != nil {
		t.Errorf("the call of a tool that may not run again: %+v, want interrupted, no record", parts[2])
	}
	answeredOnce(t, a.Store, r.id)
}

// Calls of one round that change a file run in the model's order, and a
// read after them sees what they did: a write, then an edit of what it
// wrote, then a read.
func TestARoundsWritesToOneFileHappenInTheModelsOrder(t *testing.T) {
	r := newRig(t)
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{
		{ID: "toolu_1", Name: "workspace--write", Input: `{"path":"f.txt","content":"one\n"}`},
		{ID: "toolu_2", Name: "workspace--edit", Input: `{"path":"f.txt","old_string":"one","new_string":"two"}`},
		readCall("toolu_3", "f.txt"),
	}}, providertest.Step{Text: "done"})
	r.turn("go")
	res := r.toolResults(1)
	if len(res) != 3 {
		t.Fatalf("results %v", res)
	}
	for i, c := range res[:2] {
		if c["is_error"] == true {
			t.Fatalf("call %d failed: %v", i+1, c["content"])
		}
	}
	if text, _ := res[2]["content"].(string); !strings.Contains(text, "two") || strings.Contains(text, "one") {
		t.Fatalf("the read after the write and the edit got %q, want the edited file", text)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "f.txt"))
	if err != nil || string(b) != "two\n" {
		t.Fatalf("f.txt holds %q (%v), want the write then the edit", b, err)
	}
}
