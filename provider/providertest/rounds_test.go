package providertest

import "testing"

func TestRoundsCallsTheToolUntilNAnswersThenSaysDone(t *testing.T) {
	respond := Rounds(2, "noop--run", `{}`)
	assistant := map[string]any{"role": "assistant"}
	user := map[string]any{"role": "user"}
	for _, tc := range []struct {
		name     string
		messages []any
		call     string // the call id wanted, "" for the final text
	}{
		{"first request", []any{user}, "call_0"},
		{"after one answer", []any{user, assistant, user}, "call_1"},
		{"after two answers", []any{user, assistant, user, assistant, user}, ""},
	} {
		step := respond(Request{Messages: tc.messages})
		switch {
		case tc.call == "" && (step.Text != "done" || len(step.ToolCalls) != 0):
			t.Errorf("%s: got %+v, want the text done and no call", tc.name, step)
		case tc.call != "" && (len(step.ToolCalls) != 1 || step.ToolCalls[0].ID != tc.call || step.ToolCalls[0].Name != "noop--run" || step.ToolCalls[0].Input != `{}`):
			t.Errorf("%s: got %+v, want one noop--run call %s", tc.name, step, tc.call)
		}
	}
}
