package window

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// session is a stored conversation of a prompt then n tool rounds, each a
// call and a result of resultBytes bytes; every answer reports usage of 4
// bytes a token of what its request held (fixed included).
func toolSession(fixed, n, resultBytes int) []history.Message {
	stored := []history.Message{{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "go"}}}}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		bytes, _ := size(stored, len(stored))
		stored = append(stored,
			history.Message{Role: history.Assistant, Usage: &history.Usage{Input: (fixed + bytes) / 4},
				Parts: []history.Part{{Type: history.ToolCallPart, CallID: id, Name: "shell--run", Input: json.RawMessage(`{"command":"ls"}`)}}},
			history.Message{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: id, Text: strings.Repeat("x", resultBytes)}}})
	}
	return stored
}

// cleared is the record that takes out the results of calls ids of a
// toolSession (call_N's result is stored message 2+2N).
func cleared(ids ...string) history.Message {
	e := &history.Edit{}
	for _, id := range ids {
		var n int
		fmt.Sscanf(id, "call_%d", &n)
		e.Cleared = append(e.Cleared, history.Cleared{Msg: 2 + 2*n, CallID: id, Text: "[cleared " + id + "]", Path: id + ".txt"})
	}
	return history.Message{Role: history.Context, Edit: e}
}

func TestViewSendsPlaceholdersAndSummariesAndNeverTheRecords(t *testing.T) {
	stored := toolSession(0, 3, 100)
	stored = append(stored, cleared("call_0"))
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{
		Cleared: []history.Cleared{{Msg: 3, CallID: "call_1", Input: true, Text: `{"myelin_cleared":"x"}`}}}})
	before := fmt.Sprint(stored)
	v := View(stored)
	if fmt.Sprint(stored) != before {
		t.Fatal("View changed the stored messages")
	}
	if len(v) != 7 {
		t.Fatalf("View has %d messages; want the 7 stored messages without the 2 records", len(v))
	}
	if got := v[2].Parts[0]; got.Text != "[cleared call_0]" || got.SpillPath != "call_0.txt" || got.CallID != "call_0" {
		t.Errorf("a cleared result is sent as %+v", got)
	}
	if got := string(v[3].Parts[0].Input); got != `{"myelin_cleared":"x"}` {
		t.Errorf("a cleared input is sent as %s", got)
	}
	if v[6].Parts[0].Text != strings.Repeat("x", 100) {
		t.Error("a result no record names was changed")
	}

	withSummary := append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 5, Text: "SUMMARY"}}})
	v = View(withSummary)
	if len(v) != 3 || v[0].Role != history.User || v[0].Parts[0].Text != "SUMMARY" || v[1].Parts[0].CallID != "call_2" {
		t.Fatalf("with a summary through message 5, View = %+v; want the summary then messages 5 and 6", v)
	}
}

func TestMeasureTakesOffWhatEditsStoredSinceTheLastUsageTookOut(t *testing.T) {
	stored := toolSession(400, 10, 4000)
	before := Measure(400, stored)
	after := Measure(400, append(stored, cleared("call_0", "call_1")))
	// each result is 4000+16+6 bytes and its placeholder 16+16+6 (4 bytes a token)
	saved := before.Tokens - after.Tokens
	want := 2 * (4000 - len("[cleared call_0]")) / 4
	if saved < want-2 || saved > want+2 {
		t.Fatalf("clearing 2 results of 4,000 bytes took %d tokens off (%d → %d); want about %d", saved, before.Tokens, after.Tokens, want)
	}
	// once an answer's usage counts the edited request, that is exact again
	next := append(append([]history.Message{}, stored...), cleared("call_0", "call_1"))
	bytes, _ := size(next, len(next))
	next = append(next, history.Message{Role: history.Assistant, Usage: &history.Usage{Input: (400 + bytes) / 4}, Parts: []history.Part{{Type: history.TextPart, Text: "done"}}})
	if c := Measure(400, next); c.Counted != (400+bytes)/4 || c.BytesPerToken < 3.9 || c.BytesPerToken > 4.1 {
		t.Fatalf("after an edit, the next usage calibrates on the request as sent: %+v", c)
	}
}

func TestPlanTakesNothingUnderTheHighMark(t *testing.T) {
	stored := toolSession(400, 5, 4000) // about 5,100 tokens
	p := Policy{}.Plan(10000, 400, stored, 0)
	if len(p.Clear) != 0 || p.Summarise {
		t.Fatalf("under the high mark (%d of %d) the plan took %d out", p.Count.Tokens, p.High, len(p.Clear))
	}
}

func TestPlanTakesTheOldestResultsOutDownToTheLowMarkInOneBatch(t *testing.T) {
	stored := toolSession(400, 20, 4000) // about 20,400 tokens
	p := Policy{}.Plan(24000, 400, stored, 0)
	if p.Count.Tokens <= p.High {
		t.Fatalf("setup: %d tokens is not over the high mark %d", p.Count.Tokens, p.High)
	}
	if p.After > p.Low || p.After < p.Low-1100 {
		t.Fatalf("the plan brings the request to %d; want just under the low mark %d", p.After, p.Low)
	}
	for i, k := range p.Clear {
		if want := fmt.Sprintf("call_%d", i); k.CallID != want || k.Input {
			t.Fatalf("candidate %d is %+v; want the result of %s: the oldest go first, in order", i, k, want)
		}
	}
	// the plan is what a restart plans: pure
	if again := (Policy{}).Plan(24000, 400, stored, 0); !reflect.DeepEqual(again, p) {
		t.Fatal("the same conversation planned twice gave two plans")
	}
}

func TestPlanKeepsTheNewestRoundsAndFewerOnlyWhenTheyAloneAreOverTheLowMark(t *testing.T) {
	tests := []struct {
		name        string
		rounds      int
		resultBytes int
		keep        int // rounds at the end whose results stay
	}{
		{"small rounds: the last 3 stay", 30, 4000, 3},
		{"rounds of 15% of the window: as many of the newest as fit under the low mark", 6, 24000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := toolSession(400, tt.rounds, tt.resultBytes)
			p := Policy{}.Plan(35904, 400, stored, 0)
			if len(p.Clear) == 0 {
				t.Fatalf("setup: nothing to take out at %d tokens", p.Count.Tokens)
			}
			newest := fmt.Sprintf("call_%d", tt.rounds-tt.keep)
			for _, k := range p.Clear {
				if k.CallID >= newest && len(k.CallID) == len(newest) {
					t.Fatalf("the plan takes out %s, one of the newest %d rounds", k.CallID, tt.keep)
				}
			}
			if p.After > p.Low {
				t.Errorf("the plan leaves %d tokens, over the low mark %d", p.After, p.Low)
			}
			if tt.keep < DefaultKeepRounds {
				// fewer kept only because more had to go: the one before them went
				last := p.Clear[len(p.Clear)-1].CallID
				if want := fmt.Sprintf("call_%d", tt.rounds-tt.keep-1); last != want {
					t.Errorf("the newest result taken out is %s; want %s", last, want)
				}
			}
		})
	}
}

func TestPlanSkipsWhatIsClearedAndTakesLongInputs(t *testing.T) {
	stored := toolSession(400, 20, 4000)
	stored[1].Parts[0].Input = json.RawMessage(`{"content":"` + strings.Repeat("y", 5000) + `"}`)
	stored = append(stored, cleared("call_0"))
	p := Policy{}.Plan(24000, 400, stored, 0)
	if p.Clear[0].CallID != "call_0" || !p.Clear[0].Input || p.Clear[1].CallID != "call_1" || p.Clear[1].Input {
		t.Fatalf("plan %+v; want call_0's long input (its result is cleared already), then call_1's result", p.Clear[:2])
	}
}

func TestPlanAfterARefusalTakesTheProvidersSizeAndClearsEvenUnderTheHighMark(t *testing.T) {
	stored := toolSession(400, 12, 4000) // about 12,400 tokens, estimated
	budget := 20000
	if p := (Policy{}).Plan(budget, 400, stored, 0); len(p.Clear) != 0 {
		t.Fatal("setup: the estimate is already over the high mark")
	}
	p := Policy{}.Plan(budget, 400, stored, 21000)
	if len(p.Clear) == 0 || p.After > p.Low || p.Refused != 21000 {
		t.Fatalf("after a refusal at 21,000 tokens the plan took %d out, to %d (low mark %d)", len(p.Clear), p.After, p.Low)
	}
	if !strings.Contains(p.Why(), "refused") {
		t.Errorf("Why = %q; want it to say the provider refused", p.Why())
	}
}

func TestPlanSaysSummariseWhenTakingResultsOutIsNotEnough(t *testing.T) {
	// a long conversation of text: nothing to clear
	stored := []history.Message{}
	for range 22 { // about 25,000 tokens: over the high mark of 24,000
		stored = append(stored, text(history.User, 2000), text(history.Assistant, 2000))
	}
	p := Policy{}.Plan(30000, 400, stored, 0)
	if !p.Summarise || len(p.Clear) != 0 {
		t.Fatalf("plan %+v: want Summarise with nothing to clear", p)
	}
	through, err := Policy{}.Cut(30000, 400, stored)
	if err != nil {
		t.Fatal(err)
	}
	if !boundary(stored, through) || through < 2 {
		t.Fatalf("Cut = %d: not a place a summary may end", through)
	}
	// the tail kept fits the low mark with the summary's room
	sum := append(append([]history.Message{}, stored...), history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: through, Text: strings.Repeat("s", 3000)}}})
	if c := Measure(400, sum); c.Tokens > p.Low {
		t.Fatalf("after a summary through %d the request is %d tokens, over the low mark %d", through, c.Tokens, p.Low)
	}
	// what it stands for fits the budget, to be sent in the summary request
	if b, _ := size(stored, through); int(float64(b)/DefaultBytesPerToken) > p.Budget {
		t.Fatalf("the part to summarise is %d bytes, over the high mark", b)
	}
}

func TestCutSummarisesInStepsWhenTheOlderPartIsOverTheBudget(t *testing.T) {
	stored := []history.Message{}
	for range 100 {
		stored = append(stored, text(history.User, 2000), text(history.Assistant, 2000))
	}
	budget := 30000
	through, err := Policy{}.Cut(budget, 400, stored)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := size(stored, through); int(float64(b)/DefaultBytesPerToken) > budget {
		t.Fatalf("Cut = %d sends %d bytes to be summarised, over the budget of %d tokens", through, b, budget)
	}
	// the next step goes on from the summary
	stored = append(stored, history.Message{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: through, Text: "S"}}})
	next, err := Policy{}.Cut(budget, 400, stored)
	if err != nil || next <= through {
		t.Fatalf("the next Cut = %d, %v; want a place after %d", next, err, through)
	}
}

func TestCutFailsWhenNoPlaceWillDo(t *testing.T) {
	stored := []history.Message{text(history.User, 200000)}
	if _, err := (Policy{}).Cut(30000, 400, stored); err == nil || !strings.Contains(err.Error(), "no place") {
		t.Fatalf("Cut of one huge message: %v; want an error saying there is no place to cut", err)
	}
}

func TestPolicyOffTakesNothingEver(t *testing.T) {
	stored := toolSession(400, 40, 4000)
	if p := (Policy{Off: true}).Plan(20000, 400, stored, 25000); len(p.Clear) != 0 || p.Summarise {
		t.Fatalf("Off planned %+v", p)
	}
}

func TestPolicyCheckNamesTheBadKnob(t *testing.T) {
	for _, tt := range []struct {
		p    Policy
		want string
	}{
		{Policy{High: 1.5}, "high mark 1.5"},
		{Policy{High: 0.6, Low: 0.7}, "low mark 0.7"},
		{Policy{KeepRounds: -1}, "keep rounds -1"},
	} {
		if err := tt.p.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%+v) = %v; want it to name %q", tt.p, err, tt.want)
		}
	}
	if err := (Policy{}).Check(); err != nil {
		t.Errorf("the zero Policy is refused: %v", err)
	}
}

func TestPlaceholdersNameTheFileAndTheReadyCall(t *testing.T) {
	got := ClearedResult(4000, true, ".myelin/tool-results/cleared-call_1.txt", []string{"a.png"}, "")
	want := "[myelin: an error result (4,000 characters of it were here) was cleared here to save room in the context window; it is whole in the workspace file .myelin/tool-results/cleared-call_1.txt, and its images in a.png.\n" +
		`Read it: workspace--read {"path":".myelin/tool-results/cleared-call_1.txt"}]`
	if got != want {
		t.Errorf("ClearedResult =\n%s\nwant\n%s", got, want)
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(ClearedInput(12345, "f.json")), &in); err != nil || !strings.Contains(in["myelin_cleared"], `workspace--read {"path":"f.json"}`) || !strings.Contains(in["myelin_cleared"], "12,345") {
		t.Errorf("ClearedInput = %v, %v", in, err)
	}
	if got := ClearedResult(10, false, "", nil, "there is no writable workspace"); !strings.Contains(got, "could not be kept: there is no writable workspace") {
		t.Errorf("without a file: %s", got)
	}
}
