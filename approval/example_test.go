package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/myelin-run/myelin/approval"
	"github.com/myelin-run/myelin/permission"
	"github.com/myelin-run/myelin/tool"
)

// scripted is an Asker whose person answers by the tool a call names, and
// says what they were asked.
type scripted map[string]approval.Answer

func (s scripted) Ask(ctx context.Context, r approval.Request) (approval.Answer, error) {
	fmt.Printf("  asked: %s? (%s)\n", r.Tool, r.Reason)
	return s[r.Tool], nil
}

// A Gate checks every call of a dispatcher before it runs: what the policy
// allows runs, what it asks about is put to a person through the Asker.
// An answer "yes for this session" lets the same calls run without asking
// again; a denial does not run the call, and the model reads the person's
// reason. Each call's record says who decided.
func ExampleGate() {
	notes := func(name string, readOnly bool) *tool.Tool {
		t := tool.MustFunc(name, "Works on the notes.", func(context.Context, struct{}) (any, error) { return name + " ran", nil })
		t.ReadOnly = readOnly
		return t
	}
	tools := &tool.Registry{}
	if err := tools.Add(notes("notes--list", true), notes("notes--add", false), notes("notes--delete", false)); err != nil {
		log.Fatal(err)
	}
	gate := &approval.Gate{
		Policy: &permission.Policy{}, // no rules: reads are allowed, the rest asked
		Asker: scripted{
			"notes--add":    {Choice: approval.AllowSession},
			"notes--delete": {Choice: approval.Deny, Reason: "keep every note"},
		},
	}
	d := &tool.Dispatcher{Tools: tools, Gate: gate,
		Ruled: func(_ int, c tool.Call, rec permission.Record) {
			fmt.Printf("  %s: %s by %s\n", c.Name, rec.Decision, rec.By)
		}}
	for i, name := range []string{"notes--list", "notes--add", "notes--add", "notes--delete"} {
		fmt.Println(name)
		out := d.Call(context.Background(), tool.Call{ID: fmt.Sprint("call_", i), Name: name, Input: json.RawMessage(`{}`)})
		fmt.Printf("  → %s\n", out.Text)
	}
	// Output:
	// notes--list
	//   notes--list: allow by default
	//   → notes--list ran
	// notes--add
	//   asked: notes--add? (asked by default: no rule allows notes--add)
	//   notes--add: allow by person
	//   → notes--add ran
	// notes--add
	//   notes--add: allow by session
	//   → notes--add ran
	// notes--delete
	//   asked: notes--delete? (asked by default: no rule allows notes--delete)
	//   notes--delete: deny by person
	//   → the user denied this call of notes--delete, and it did not run. Their reason: keep every note
}
