package script

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// A script's tool call is checked like the model's own: under a gate that
// denies workspace--write, a script's write is not run, and the script
// gets an error result saying it was denied and why; its read, allowed
// by default, runs.
func TestAScriptsCallIsCheckedByTheGateOfItsCall(t *testing.T) {
	r := newRig(t, Limits{})
	var rules []permission.Rule
	for _, s := range []struct {
		text string
		d    permission.Decision
	}{{Name, permission.Allow}, {"workspace--write", permission.Deny}} {
		rule, err := permission.ParseRule(s.text, s.d, "--"+s.d.String())
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, rule)
	}
	g := &approval.Gate{Policy: &permission.Policy{User: rules}}
	if err := os.WriteFile(filepath.Join(r.ws.Dir(), "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]string{"code": `
		const w = await tools["workspace--write"]({path: "w.txt", content: "x"});
		const rd = await tools["workspace--read"]({path: "a.txt"});
		return {w: w.content[0].text, wErr: w.isError, r: rd.content[0].text, rErr: rd.isError}`})
	out := r.d.Call(tool.WithGate(context.Background(), g), tool.Call{ID: "call_1", Name: Name, Input: in})
	if out.IsError {
		t.Fatalf("the script failed: %s", out.Text)
	}
	var got struct {
		W    string `json:"w"`
		WErr bool   `json:"wErr"`
		R    string `json:"r"`
		RErr bool   `json:"rErr"`
	}
	if err := json.Unmarshal([]byte(out.Text), &got); err != nil {
		t.Fatalf("%q: %v", out.Text, err)
	}
	if _, err := os.Stat(filepath.Join(r.ws.Dir(), "w.txt")); err == nil {
		t.Fatal("the script's denied write ran")
	}
	if !got.WErr || !strings.Contains(got.W, "denied") || !strings.Contains(got.W, "workspace--write (--deny)") {
		t.Errorf("the script's write got %q (error %v), want a denial naming the rule", got.W, got.WErr)
	}
	if got.RErr || !strings.Contains(got.R, "alpha") {
		t.Errorf("the script's read got %q (error %v), want the file", got.R, got.RErr)
	}
}
