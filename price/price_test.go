package price

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
)

// near reports whether a and b are the same number of dollars but for
// floating point rounding.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestBuiltinTableParsesWithItsDateAndSource(t *testing.T) {
	tb := Builtin()
	if tb.Date == "" || len(tb.Source) == 0 || tb.Note == "" {
		t.Fatalf("the built-in table has date %q, source %v, note %q: it must say all three", tb.Date, tb.Source, tb.Note)
	}
	for _, s := range tb.Source {
		if !strings.HasPrefix(s, "https://") {
			t.Errorf("source %q is not a URL", s)
		}
	}
	for _, name := range []string{"claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-5-haiku", "gpt-4o", "gpt-4.1", "o3", "o4-mini", "gpt-5", "gemini-2.5-pro", "gemini-2.5-flash"} {
		if _, ok := tb.Lookup(name); !ok {
			t.Errorf("the built-in table does not price %s", name)
		}
	}
}

// The cache prices of Anthropic's models follow from their input price:
// reads 0.1x, five-minute writes 1.25x, one-hour writes 2x. A typo in
// prices.json breaks this.
func TestBuiltinAnthropicCachePricesFollowTheInputPrice(t *testing.T) {
	tb := Builtin()
	for _, name := range tb.Models() {
		if !strings.HasPrefix(name, "claude-") {
			continue
		}
		if name == "claude-3-haiku" {
			continue // its page gives cache prices that are not those multiples: $0.03 and $0.30
		}
		m, _ := tb.Lookup(name)
		for _, p := range []Model{m, deref(m.Long)} {
			if p.Input == 0 {
				continue
			}
			if !near(p.CacheRead, p.Input*0.1) || !near(p.CacheWrite, p.Input*1.25) || !near(p.CacheWrite1h, p.Input*2) {
				t.Errorf("%s: input %v, cache read %v (want 0.1x), write %v (1.25x), 1h write %v (2x)", name, p.Input, p.CacheRead, p.CacheWrite, p.CacheWrite1h)
			}
		}
	}
}

func deref(m *Model) Model {
	if m == nil {
		return Model{}
	}
	return *m
}

func TestCostPricesEachKindOfTokenAtItsPrice(t *testing.T) {
	m := Model{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, CacheWrite1h: 6}
	u := history.Usage{Input: 1_000_000, Output: 2_000_000, CacheRead: 3_000_000, CacheWrite: 4_000_000, CacheWrite1h: 1_000_000}
	c := m.Cost(u)
	want := 3 + 2*15 + 3*0.3 + 3*3.75 + 1*6.0 // the 1h writes are part of cache_write
	if !c.Known || !near(c.Dollars, want) {
		t.Fatalf("cost %+v, want known $%v", c, want)
	}
}

func TestCostAboveTheLongTierPricesTheWholeRequestAtIt(t *testing.T) {
	m, _ := Builtin().Lookup("gemini-2.5-pro")
	short := m.Cost(history.Usage{Input: 200_000, Output: 1000})
	long := m.Cost(history.Usage{Input: 150_000, CacheRead: 50_001, Output: 1000})
	if !near(short.Dollars, (200_000*1.25+1000*10)/1e6) {
		t.Errorf("a 200,000-token prompt costs %v, want the first tier's price", short.Dollars)
	}
	if !near(long.Dollars, (150_000*2.5+50_001*0.25+1000*15)/1e6) {
		t.Errorf("a 200,001-token prompt (cache reads included) costs %v, want the whole at the long tier", long.Dollars)
	}
}

func TestUnknownModelCostsUnknownNeverZero(t *testing.T) {
	c := Builtin().Cost("my-local-llama", history.Usage{Input: 10, Output: 10})
	if c.Known || c.Dollars != 0 {
		t.Fatalf("an unknown model's cost is %+v, want unknown", c)
	}
	if s := c.String(); s != "cost unknown (model my-local-llama not in the price table)" {
		t.Fatalf("shown as %q", s)
	}
}

func TestOneHourWritesWithoutAPriceCostUnknown(t *testing.T) {
	c := Builtin().Cost("gpt-4o", history.Usage{Input: 10, CacheWrite: 10, CacheWrite1h: 10})
	if c.Known || !strings.Contains(c.Why, "one-hour") {
		t.Fatalf("one-hour writes on a model with no such price cost %+v, want unknown saying why", c)
	}
}

func TestSumIsKnownOnlyWhenEveryPartIs(t *testing.T) {
	a := Cost{Dollars: 0.5, Known: true}
	u := Cost{Why: "model x not in the price table"}
	if s := Sum(a, a); !s.Known || !near(s.Dollars, 1) || s.String() != "$1.0000" {
		t.Errorf("two known: %+v %q", s, s.String())
	}
	if s := Sum(a, u); s.Known || !s.Some || s.String() != "at least $0.5000 (model x not in the price table)" {
		t.Errorf("known and unknown: %+v %q", s, s.String())
	}
	if s := Sum(u, a); s.Known || !s.Some || !near(s.Dollars, 0.5) {
		t.Errorf("unknown then known: %+v", s)
	}
	if s := Sum(u, u); s.Known || s.Some || s.String() != "cost unknown (model x not in the price table)" {
		t.Errorf("two unknown: %+v %q", s, s.String())
	}
	if s := Sum(Cost{Known: true}, u); s.String() != "cost unknown (model x not in the price table)" {
		t.Errorf("a known $0 and an unknown show as %q: want unknown, not at least $0", s.String())
	}
	if s := Sum(); !s.Known || s.Dollars != 0 {
		t.Errorf("no parts: %+v, want a known $0", s)
	}
}

func TestDollarsShowsSmallCostsAsSmallNotZero(t *testing.T) {
	for d, want := range map[float64]string{0: "$0.0000", 0.00001: "under $0.0001", 0.0123: "$0.0123", 1.5: "$1.5000", 12.345: "$12.35"} {
		if got := Dollars(d); got != want {
			t.Errorf("Dollars(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestBedrockAndVertexIdsArePricedAsTheProvidersModel(t *testing.T) {
	tb := Builtin()
	for id, want := range map[string]string{
		"claude-sonnet-4-5-20250929":                                                                          "claude-sonnet-4-5",
		"anthropic.claude-sonnet-4-5-20250929-v1:0":                                                           "claude-sonnet-4-5",
		"us.anthropic.claude-sonnet-4-20250514-v1:0":                                                          "claude-sonnet-4",
		"global.anthropic.claude-haiku-4-5-20251001-v1:0":                                                     "claude-haiku-4-5",
		"anthropic.claude-3-haiku-20240307-v1:0:200k":                                                         "claude-3-haiku",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-opus-4-1-20250805-v1:0": "claude-opus-4-1",
		"claude-opus-4-1@20250805":                                                                            "claude-opus-4-1",
		"claude-3-5-sonnet-v2@20241022":                                                                       "claude-3-5-sonnet-v2",
		"publishers/anthropic/models/claude-sonnet-4@20250514":                                                "claude-sonnet-4",
		"claude-3-5-haiku-latest":                                                                             "claude-3-5-haiku",
		"gpt-4o-2024-08-06":                                                                                   "gpt-4o",
		"gpt-4o-mini-2024-07-18":                                                                              "gpt-4o-mini",
		"models/gemini-2.5-pro":                                                                               "gemini-2.5-pro",
	} {
		got, ok := tb.Lookup(id)
		w, _ := tb.Lookup(want)
		if !ok || got != w {
			t.Errorf("%s is priced %+v (found %v), want as %s (%+v)", id, got, ok, want, w)
		}
	}
	// a name the table has not is unknown, not the price of a shorter one
	for _, id := range []string{"gpt-4o-audio-preview", "gemini-2.5-flash-preview-04-17", "anthropic.titan", "meta.llama3-70b-instruct-v1:0"} {
		if m, ok := tb.Lookup(id); ok {
			t.Errorf("%s is priced %+v: want unknown", id, m)
		}
	}
}

func TestUserFileReplacesAndAddsModels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"date": "2026-12-01", "source": ["https://example.com"], "models": {
  "gpt-4o": {"input": 1, "output": 2, "cache_read": 0.5, "cache_write": 1},
  "my-local-llama": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
}}`), 0o644)
	tb, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := tb.Lookup("gpt-4o"); m.Input != 1 || m.Output != 2 {
		t.Errorf("gpt-4o is %+v: want the file's prices", m)
	}
	if c := tb.Cost("my-local-llama", history.Usage{Input: 5}); !c.Known || c.Dollars != 0 {
		t.Errorf("a model the file prices at 0 costs %+v: want a known $0", c)
	}
	if _, ok := tb.Lookup("claude-opus-4-5"); !ok {
		t.Error("the built-in models the file does not name are gone")
	}
	if len(tb.Overrides) != 1 || tb.Overrides[0] != path+" (2026-12-01)" {
		t.Errorf("overrides %q", tb.Overrides)
	}
	if m, _ := Builtin().Lookup("gpt-4o"); m.Input != 2.5 {
		t.Errorf("loading a file changed the built-in table: gpt-4o %+v", m)
	}
}

func TestUserFileIsReadFromTheConfigDirectoryWhenThere(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	tb, err := Load("")
	if err != nil || len(tb.Overrides) != 0 {
		t.Fatalf("with no user file: %v, overrides %q", err, tb.Overrides)
	}
	path, _ := UserFile()
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"models": {"x": {"input": 1, "output": 1, "cache_read": 1, "cache_write": 1}}}`), 0o644)
	tb, err = Load("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Lookup("x"); !ok {
		t.Fatalf("the user file at %s was not read", path)
	}
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil {
		t.Fatal("a --prices file that is not there is no error")
	}
}

func TestBadPricesFileSaysWhereAndWhat(t *testing.T) {
	for name, c := range map[string]struct{ text, want string }{
		"syntax":          {"{\"models\": {\n  \"a\": {\"input\": 1,,}\n}}", "p.json line 2: invalid character"},
		"type":            {"{\"models\": {\n  \"a\": {\n  \"input\": \"1\", \"output\": 1, \"cache_read\": 1, \"cache_write\": 1}}}", "p.json line 3: model \"a\": json: cannot unmarshal string"},
		"unknown field":   {"{\"models\": {\n  \"a\": {\"input\": 1, \"output\": 1,\n \"cache_reads\": 1, \"cache_write\": 1}}}", "p.json line 3: model \"a\": json: unknown field \"cache_reads\""},
		"top field":       {"{\"date\": \"x\",\n\"modles\": {}}", "p.json line 2: json: unknown field \"modles\""},
		"missing":         {"{\"models\": {\n\"a\": {\"input\": 1, \"output\": 1, \"cache_write\": 1}}}", "p.json line 2: model \"a\": \"cache_read\" is missing"},
		"negative":        {"{\"models\": {\n\"a\": {\"input\": 1, \"output\": 1,\n\"cache_read\": -1, \"cache_write\": 1}}}", "p.json line 3: model \"a\": \"cache_read\" is -1"},
		"half a tier":     {"{\"models\": {\"a\": {\"input\": 1, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1, \"long_above\": 5}}}", "\"long_above\" and \"long\" go together"},
		"tier incomplete": {"{\"models\": {\"a\": {\"input\": 1, \"output\": 1, \"cache_read\": 1, \"cache_write\": 1, \"long_above\": 5, \"long\": {\"input\": 2}}}}", "\"long\": \"output\" is missing"},
		"no models":       {"{\"date\": \"x\"}", "p.json: no \"models\""},
	} {
		_, err := Parse("p.json", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", name, err, c.want)
		}
	}
}

// The cost of a recorded conversation, worked out by hand at Claude
// Sonnet 4.5's prices ($3 input, $15 output, $0.30 cache reads, $3.75
// five-minute and $6 one-hour cache writes per million tokens), is what
// Conversation reports: per request, per turn and in all.
func TestCostOfARecordedConversationIsWhatItCostsByHand(t *testing.T) {
	data, err := os.ReadFile("testdata/conversation.json")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []history.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	answer1 := (1200*3 + 150*15 + 3000*3.75) / 1e6                  // 5-minute writes
	answer2 := (50*3 + 60*15 + 3000*0.3 + 800*3.75) / 1e6           // reads and writes
	summary := (5000*3 + 400*15) / 1e6                              // the summary's request
	answer3 := (20*3 + 200*15 + 3800*0.3 + 500*3.75 + 1500*6) / 1e6 // 1,500 of the 2,000 writes for an hour
	p := Builtin().Conversation(msgs)
	if len(p.Turns) != 2 {
		t.Fatalf("%d turns, want 2: %+v", len(p.Turns), p.Turns)
	}
	want := [][]float64{{answer1, answer2}, {summary, answer3}}
	wantMsg := [][]int{{1, 3}, {5, 6}}
	for i, tr := range p.Turns {
		if len(tr.Requests) != len(want[i]) {
			t.Fatalf("turn %d has %d requests, want %d", i+1, len(tr.Requests), len(want[i]))
		}
		sum := 0.0
		for j, r := range tr.Requests {
			if !r.Cost.Known || !near(r.Cost.Dollars, want[i][j]) || r.Msg != wantMsg[i][j] {
				t.Errorf("turn %d request %d (message %d, %s): %+v, want $%v at message %d", i+1, j+1, r.Msg, r.Kind, r.Cost, want[i][j], wantMsg[i][j])
			}
			sum += want[i][j]
		}
		if !tr.Cost.Known || !near(tr.Cost.Dollars, sum) {
			t.Errorf("turn %d costs %+v, want $%v", i+1, tr.Cost, sum)
		}
	}
	total := answer1 + answer2 + summary + answer3
	if !p.Cost.Known || !near(p.Cost.Dollars, total) || p.Cost.String() != "$0.0581" {
		t.Errorf("the conversation costs %+v (%s), want $%v", p.Cost, p.Cost, total)
	}
}

func TestConversationWithAnUnknownModelCostsAtLeastItsKnownPart(t *testing.T) {
	u := &history.Usage{Input: 1_000_000}
	msgs := []history.Message{
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}},
		{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "gpt-4o"}},
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "again"}}},
		{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "my-local-llama"}},
	}
	p := Builtin().Conversation(msgs)
	if !p.Turns[0].Cost.Known || p.Turns[1].Cost.Known {
		t.Fatalf("turns %+v: want the first known, the second not", p.Turns)
	}
	if got := p.Cost.String(); got != "at least $2.5000 (model my-local-llama not in the price table)" {
		t.Fatalf("the conversation shows %q", got)
	}
}

// docs/cost.md lists the built-in table: a row per model, the same prices.
func TestTheDocsListTheBuiltinTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "cost.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ = strings.Cut(name, "`")
			rows[name] = line
		}
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	tb := Builtin()
	for _, name := range tb.Models() {
		m, _ := tb.Lookup(name)
		oneH := "—"
		if m.CacheWrite1h > 0 {
			oneH = g(m.CacheWrite1h)
		}
		want := fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s |", name, g(m.Input), g(m.Output), g(m.CacheRead), g(m.CacheWrite), oneH)
		if !strings.HasPrefix(rows[name], want) {
			t.Errorf("docs/cost.md's row of %s is %q, want it to begin %q", name, rows[name], want)
		}
		if m.Long != nil && !strings.Contains(rows[name], fmt.Sprintf("above %s: %s / %s", commas(m.LongAbove), g(m.Long.Input), g(m.Long.Output))) {
			t.Errorf("docs/cost.md's row of %s does not give its long tier (above %d: %v / %v): %q", name, m.LongAbove, m.Long.Input, m.Long.Output, rows[name])
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/cost.md lists %s, which the built-in table does not price", name)
	}
}

// commas is n with its thousands separated: 200,000.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A snapshot the table prices on its own (gpt-4o-2024-05-13, dearer than
// gpt-4o) is priced at its own entry, however its id is written; a
// snapshot without one falls back to its family's undated entry.
func TestADatedEntryWinsOverItsUndatedFamily(t *testing.T) {
	tb := Builtin()
	if m, ok := tb.Lookup("gpt-4o-2024-05-13"); !ok || m.Input != 5 || m.Output != 15 {
		t.Errorf("gpt-4o-2024-05-13 is priced %+v (found %v), want its own $5 input and $15 output, not gpt-4o's", m, ok)
	}
	if m, ok := tb.Lookup("gpt-4o-2024-11-20"); !ok || m.Input != 2.5 {
		t.Errorf("gpt-4o-2024-11-20 is priced %+v (found %v), want gpt-4o's $2.50 input", m, ok)
	}
	over, err := Parse("p.json", []byte(`{"models": {
		"claude-x": {"input": 1, "output": 1, "cache_read": 1, "cache_write": 1},
		"claude-x-20250101": {"input": 2, "output": 2, "cache_read": 2, "cache_write": 2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tb = tb.With("p.json", over)
	for id, want := range map[string]float64{
		"claude-x-20250101":                   2,
		"claude-x@20250101":                   2, // Vertex
		"us.anthropic.claude-x-20250101-v1:0": 2, // Bedrock
		"claude-x-20250601":                   1,
		"claude-x@20250601":                   1,
		"claude-x":                            1,
	} {
		if m, ok := tb.Lookup(id); !ok || m.Input != want {
			t.Errorf("%s is priced %+v (found %v), want input $%v", id, m, ok, want)
		}
	}
}

// Requests stored before a conversation's first prompt are a turn of
// their own whose Prompt is -1: no message, so not the message at 0.
func TestRequestsBeforeTheFirstPromptAreATurnWithNoPrompt(t *testing.T) {
	u := &history.Usage{Input: 1_000_000}
	msgs := []history.Message{
		{Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "gpt-4o"}},
		{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}},
		{Role: history.Assistant, Usage: u},
	}
	p := Builtin().Conversation(msgs)
	if len(p.Turns) != 2 || p.Turns[0].Prompt != -1 || p.Turns[1].Prompt != 1 {
		t.Fatalf("turns %+v: want one before the first prompt (Prompt -1) and one from message 1", p.Turns)
	}
}

// A conversation that stored no Settings costs unknown, unless the caller
// says which model it was asked of (ConversationAt, the agent's budgets);
// a request before the first Settings is priced at that Settings' model.
func TestConversationAtPricesAConversationWithoutSettingsAtTheGivenModel(t *testing.T) {
	u := &history.Usage{Input: 1_000_000}
	prompt := history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "hi"}}}
	none := []history.Message{prompt, {Role: history.Assistant, Usage: u}}
	if c := Conversation(Builtin(), none).Cost; c.Known {
		t.Errorf("a conversation with no Settings costs %+v: want unknown", c)
	}
	if c := ConversationAt(Builtin(), "gpt-4o", none).Cost; !c.Known || !near(c.Dollars, 2.5) {
		t.Errorf("a conversation with no Settings, at gpt-4o, costs %+v: want $2.50", c)
	}
	later := []history.Message{prompt, {Role: history.Assistant, Usage: u}, prompt, {Role: history.Assistant, Usage: u, Settings: &history.Settings{Model: "gpt-4o-mini"}}}
	if c := ConversationAt(Builtin(), "gpt-4o", later).Cost; !c.Known || !near(c.Dollars, 0.3) {
		t.Errorf("two answers before and at gpt-4o-mini's Settings cost %+v: want $0.30, both at gpt-4o-mini", c)
	}
}

// BenchmarkParseTheBuiltinTable is what every run pays to read the
// prices it ships with (price.Builtin, on the way to a resumed turn's
// first request: issue 34), beside its floor: decoding the same bytes
// into the file's own struct and nothing else.
//
//	go test ./price -run '^$' -bench ParseTheBuiltinTable
func BenchmarkParseTheBuiltinTable(b *testing.B) {
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse("prices.json", builtinJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor-decode", func(b *testing.B) {
		for b.Loop() {
			var f file
			if err := json.Unmarshal(builtinJSON, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
