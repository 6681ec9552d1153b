package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/price"
	"github.com/myelin-run/myelin/provider/providertest"
)

// recordedConversation is price's fixture: two turns at
// claude-sonnet-4-5-20250929, with cache reads, five-minute and one-hour
// cache writes and a summary's request.
func recordedConversation(t *testing.T) []history.Message {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "price", "testdata", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []history.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// The fixture's requests' costs, by hand at Claude Sonnet 4.5's prices:
// $3 input, $15 output, $0.30 cache reads, $3.75 five-minute and $6
// one-hour cache writes per million tokens.
var (
	handAnswer1 = (1200*3 + 150*15 + 3000*3.75) / 1e6
	handAnswer2 = (50*3 + 60*15 + 3000*0.3 + 800*3.75) / 1e6
	handSummary = (5000*3 + 400*15) / 1e6
	handAnswer3 = (20*3 + 200*15 + 3800*0.3 + 500*3.75 + 1500*6) / 1e6
)

func TestHistoryShowGivesTheCostOfEachRequestTurnAndTheConversation(t *testing.T) {
	dir := workspaceWith(t, nil)
	storeConversation(t, dir, "c1", recordedConversation(t))
	out, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	d := price.Dollars
	for _, want := range []string{
		"[usage: 1200 input, 0 cached, 3000 cache-written, 150 output; cost " + d(handAnswer1) + "]",
		"[usage: 50 input, 3000 cached, 800 cache-written, 60 output; cost " + d(handAnswer2) + "]",
		"[usage of the summary's request: 5000 input, 0 cached, 0 cache-written, 400 output; cost " + d(handSummary) + "]",
		"[usage: 20 input, 3800 cached, 2000 cache-written (1500 of them for an hour), 200 output; cost " + d(handAnswer3) + "]",
		"[turn from message 1: 2 requests, cost " + d(handAnswer1+handAnswer2) + "]\n── 5 user",
		"[turn from message 5: 2 requests, cost " + d(handSummary+handAnswer3) + "]\n── conversation: 4 requests, cost " +
			d(handAnswer1+handAnswer2+handSummary+handAnswer3) + " (at the built-in prices of " + price.Builtin().Date + "; docs/cost.md)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("history show lacks %q:\n%s", want, out)
		}
	}
}

func TestHistoryShowJSONCarriesEachRequestsAndTurnsCost(t *testing.T) {
	dir := workspaceWith(t, nil)
	storeConversation(t, dir, "c1", recordedConversation(t))
	out, errOut, code := cli(t, "history", "show", "--json", "c1", "--workspace", dir)
	var got []struct {
		Role     history.Role `json:"role"`
		Cost     *price.JSON  `json:"cost"`
		TurnCost *price.JSON  `json:"turn_cost"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	usd := func(c *price.JSON) float64 {
		if c == nil || !c.Known || c.USD == nil {
			return math.NaN()
		}
		return *c.USD
	}
	for i, want := range map[int]float64{1: handAnswer1, 3: handAnswer2, 5: handSummary, 6: handAnswer3} {
		if g := usd(got[i].Cost); math.Abs(g-want) > 1e-12 {
			t.Errorf("message %d's cost is %+v, want usd %v", i+1, got[i].Cost, want)
		}
	}
	for i, want := range map[int]float64{0: handAnswer1 + handAnswer2, 4: handSummary + handAnswer3} {
		if g := usd(got[i].TurnCost); math.Abs(g-want) > 1e-12 {
			t.Errorf("the turn of message %d costs %+v, want usd %v", i+1, got[i].TurnCost, want)
		}
	}
	for _, i := range []int{0, 2, 4} {
		if got[i].Cost != nil {
			t.Errorf("message %d (%s), which holds no usage, has a cost %+v", i+1, got[i].Role, got[i].Cost)
		}
	}
}

func TestHistoryShowSaysUnknownNotZeroForAModelNotInThePriceTable(t *testing.T) {
	dir := workspaceWith(t, nil)
	msgs := recordedConversation(t)
	msgs[6].Settings.Model = "my-local-llama" // the second turn's answer
	storeConversation(t, dir, "c1", msgs)
	out, _, code := cli(t, "history", "show", "c1", "--workspace", dir)
	d := price.Dollars
	for _, want := range []string{
		"200 output; cost unknown (model my-local-llama not in the price table)]",
		"[turn from message 5: 2 requests, cost at least " + d(handSummary) + " (model my-local-llama not in the price table)]",
		"── conversation: 4 requests, cost at least " + d(handAnswer1+handAnswer2+handSummary) + " (model my-local-llama",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d; history show lacks %q:\n%s", code, want, out)
		}
	}
	out, _, _ = cli(t, "history", "show", "--json", "c1", "--workspace", dir)
	var got []map[string]any
	json.Unmarshal([]byte(out), &got)
	if c, _ := got[6]["cost"].(map[string]any); c == nil || c["known"] != false || c["usd"] != nil || !strings.Contains(c["why"].(string), "my-local-llama") {
		t.Errorf("--json gives the unknown answer's cost as %v: want known false, no usd, and why", got[6]["cost"])
	}
}

func TestHistoryShowPricesAtTheGivenPricesFile(t *testing.T) {
	dir := workspaceWith(t, nil)
	msgs := recordedConversation(t)
	for _, i := range []int{1, 6} {
		msgs[i].Settings.Model = "my-local-llama"
	}
	storeConversation(t, dir, "c1", msgs)
	file := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(file, []byte(`{"date": "2026-12-01", "models": {"my-local-llama": {"input": 1, "output": 1, "cache_read": 1, "cache_write": 1, "cache_write_1h": 1}}}`), 0o644)
	out, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir, "--prices", file)
	// every token at $1 a million: 4,350 + 3,910 + 5,400 + 6,020 tokens
	want := "── conversation: 4 requests, cost " + price.Dollars(19680/1e6) + " (at the built-in prices of " + price.Builtin().Date + " with " + file + " (2026-12-01) over them; docs/cost.md)"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d %s; history show lacks %q:\n%s", code, errOut, want, out)
	}
}

func TestABadPricesFileIsAClearErrorNamingItsLine(t *testing.T) {
	dir := workspaceWith(t, nil)
	storeConversation(t, dir, "c1", recordedConversation(t))
	file := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(file, []byte("{\"models\": {\n  \"x\": {\"input\": 1, \"output\": 1,\n  \"cached\": 1}}}"), 0o644)
	want := file + " line 3: model \"x\": json: unknown field \"cached\""
	if _, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir, "--prices", file); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("history show: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	fakeAnthropic(t, providertest.Step{Text: "hi"})
	if _, errOut, code := cli(t, "run", "--workspace", dir, "--prices", file, "hello"); code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("run: exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	if _, errOut, code := cli(t, "history", "list", "--workspace", dir, "--prices", file); code != exitUsage || !strings.Contains(errOut, "--prices goes with history show") {
		t.Errorf("history list --prices: exit %d, stderr %q", code, errOut)
	}
}

func TestTheTokenLineSaysCostUnknownForAModelNotInThePriceTable(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, providertest.Step{Text: "hi", Input: 1000, Output: 100})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--model", "my-local-llama", "hello")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if want := "; 100 output; cost unknown (model my-local-llama not in the price table)"; code != 0 || !strings.HasSuffix(lines[len(lines)-1], want) {
		t.Fatalf("exit %d, last line %q: want it to end %q", code, lines[len(lines)-1], want)
	}
	// priced by the user's file in the configuration directory
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	os.MkdirAll(filepath.Join(config, "myelin"), 0o755)
	os.WriteFile(filepath.Join(config, "myelin", "prices.json"), []byte(`{"models": {"my-local-llama": {"input": 2, "output": 10, "cache_read": 0, "cache_write": 0}}}`), 0o644)
	fakeAnthropic(t, providertest.Step{Text: "hi", Input: 1000, Output: 100})
	_, errOut, code = cli(t, "run", "--workspace", dir, "--model", "my-local-llama", "hello")
	lines = strings.Split(strings.TrimSpace(errOut), "\n")
	if want := "; 100 output; cost " + price.Dollars((1000*2+100*10)/1e6); code != 0 || !strings.HasSuffix(lines[len(lines)-1], want) {
		t.Fatalf("exit %d, last line %q: want it to end %q", code, lines[len(lines)-1], want)
	}
}

// chat's token line gives each turn's own cost, not the conversation's
// so far.
func TestChatGivesEachTurnItsOwnCost(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t,
		providertest.Step{Text: "one", Input: 1000, Output: 100},
		providertest.Step{Text: "two", Input: 2000, Output: 10, CacheRead: 1000})
	_, errOut, code := cliIn(t, "first\nsecond\n", "chat", "--workspace", dir)
	var costs []string
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, "tokens: ") {
			_, c, _ := strings.Cut(line, "; cost ")
			costs = append(costs, c)
		}
	}
	// at claude-sonnet-4-5's prices: 1,000*3 + 100*15, then
	// 2,000*3 + 10*15 + 1,000*0.3 dollars per million tokens
	want := []string{price.Dollars(4500 / 1e6), price.Dollars(6450 / 1e6)}
	if code != 0 || len(costs) != 2 || costs[0] != want[0] || costs[1] != want[1] {
		t.Fatalf("exit %d, the turns' costs %q, want %q; stderr:\n%s", code, costs, want, errOut)
	}
}

// Each request is priced on its own: two requests of 110,000 tokens are
// not one long prompt priced at Claude Sonnet 4.5's tier above 200,000.
func TestTheTurnsCostPricesEachRequestOnItsOwn(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 110_000, Output: 10},
		providertest.Step{Text: "alpha", Input: 110_000, Output: 10})
	_, errOut, code := cli(t, "run", "--workspace", dir, "read a.txt")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := "; cost " + price.Dollars(2*(110_000*3+10*15)/1e6)
	if code != 0 || !strings.HasSuffix(lines[len(lines)-1], want) {
		t.Fatalf("exit %d, last line %q: want it to end %q (not the long tier's %s)", code, lines[len(lines)-1], want, price.Dollars(2*(110_000*6+10*22.5)/1e6))
	}
}

// A refused answer's request cost money too: history show prices it
// where it shows its usage, and counts it in its turn.
func TestHistoryShowPricesARefusedRequest(t *testing.T) {
	dir := workspaceWith(t, nil)
	msgs := recordedConversation(t)[:4]
	refused := &history.Usage{Input: 4000, Output: 20}
	msgs = append(msgs[:3], history.Message{Role: history.Context, Edit: &history.Edit{
		Cleared: []history.Cleared{{Msg: 2, CallID: "toolu_1", Text: "[withheld]", Chars: 5}},
		Refusal: &history.Refusal{Stop: "refusal", Text: "no", Usage: refused}}}, msgs[3])
	storeConversation(t, dir, "c1", msgs)
	out, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir)
	refusedCost := (4000*3 + 20*15) / 1e6
	for _, want := range []string{
		"[usage of the refused request: 4000 input, 0 cached, 0 cache-written, 20 output; cost " + price.Dollars(refusedCost) + "]",
		"[turn from message 1: 3 requests, cost " + price.Dollars(handAnswer1+refusedCost+handAnswer2) + "]",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d %s; history show lacks %q:\n%s", code, errOut, want, out)
		}
	}
}
