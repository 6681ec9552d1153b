package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/tool"
)

func TestAnAnswersContentIsCheckedAgainstTheFormsFields(t *testing.T) {
	e := &Elicitation{Mode: "form", Fields: []Field{
		{Name: "age", Type: "integer", Required: true},
		{Name: "color", Type: "string", Enum: []string{"red", "blue"}, Default: "blue"},
		{Name: "name", Type: "string", Default: "Ann"},
		{Name: "note", Type: "string"},
		{Name: "ratio", Type: "number"},
		{Name: "verified", Type: "boolean", Default: true},
	}}
	for _, c := range []struct {
		content string
		want    string // the content checked, or the error's words
	}{
		{`{"age":30}`, `{"age":30,"color":"blue","name":"Ann","verified":true}`},
		{`{"age":30,"color":"red","name":"Bo","note":"hi","ratio":0.5,"verified":false}`, `{"age":30,"color":"red","name":"Bo","note":"hi","ratio":0.5,"verified":false}`},
		{`{}`, `field "age" is required`},
		{`{"age":null}`, `field "age" is required`},
		{`{"age":30.5}`, `field "age": 30.5 is not an integer`},
		{`{"age":"30"}`, `field "age": "30" is not a number`},
		{`{"age":30,"color":"green"}`, `field "color": "green" is not one of red, blue`},
		{`{"age":30,"verified":"yes"}`, `field "verified": "yes" is not a boolean`},
		{`{"age":30,"name":7}`, `field "name": 7 is not a string`},
		{`{"age":30,"nick":"x"}`, `the form has no field "nick" (its fields: age, color, name, note, ratio, verified)`},
	} {
		var content map[string]any
		if err := json.Unmarshal([]byte(c.content), &content); err != nil {
			t.Fatal(err)
		}
		got, err := e.Check(content)
		if err != nil {
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %q, want %q", c.content, err, c.want)
			}
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != c.want {
			t.Errorf("%s: checked as %s, want %s", c.content, b, c.want)
		}
	}
}

func TestAnAnswerIsHeldToTheWholeSchemaOfTheForm(t *testing.T) {
	e := &Elicitation{Mode: "form", Fields: []Field{{Name: "name", Type: "string", Required: true}},
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":2}},"required":["name"]}`)}
	if _, err := e.Check(map[string]any{"name": "A"}); err == nil || !strings.Contains(err.Error(), "does not fit the form's schema") {
		t.Fatalf("a name too short: %v", err)
	}
	if got, err := e.Check(map[string]any{"name": "Al"}); err != nil || got["name"] != "Al" {
		t.Fatalf("a name long enough: %v %v", got, err)
	}
}

type ctxKey struct{}

// TestWhatAServerAsksComesWithTheContextsOfItsCallsInFlight pins the seam
// the HTTP API finds a request's conversation by: the Elicitor's ctx
// carries the context the call was made with.
func TestWhatAServerAsksComesWithTheContextsOfItsCallsInFlight(t *testing.T) {
	var got []string
	el := &elicitor{answer: func(*Elicitation) Answer { return Answer{Action: "decline"} }}
	seen := elicitorFunc(func(ctx context.Context, e *Elicitation) (Answer, error) {
		for _, c := range Calls(ctx) {
			v, _ := c.Value(ctxKey{}).(string)
			got = append(got, v)
		}
		return el.Elicit(ctx, e)
	})
	h := start(t, []Server{askServer(t)}, Options{Elicitor: seen})
	ctx := context.WithValue(context.Background(), ctxKey{}, "conversation A")
	out := h.d.Call(ctx, tool.Call{ID: "c1", Name: "asker--elicit", Input: json.RawMessage(`{}`)})
	if out.Text != "decline null" {
		t.Fatalf("the call answered %q", out.Text)
	}
	if strings.Join(got, ",") != "conversation A" {
		t.Fatalf("the elicitor's calls in flight carry %q, want the call's own context", got)
	}
}

type elicitorFunc func(context.Context, *Elicitation) (Answer, error)

func (f elicitorFunc) Elicit(ctx context.Context, e *Elicitation) (Answer, error) { return f(ctx, e) }
