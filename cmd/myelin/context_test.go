package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/agent"
	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/history/sqlite"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/window"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// contextConversation is a conversation holding Settings stored with an
// answer and both kinds of Context record: an Edit that clears two results
// (one spilled, one whose file could not be written) and an input, and a
// summary.
func contextConversation() []history.Message {
	text := func(role history.Role, s string) history.Message {
		return history.Message{Role: role, Parts: []history.Part{{Type: history.TextPart, Text: s}}}
	}
	call := func(id, name, input string) history.Part {
		return history.Part{Type: history.ToolCallPart, CallID: id, Name: name, Input: json.RawMessage(input)}
	}
	res := func(id, s, spill string) history.Part {
		return history.Part{Type: history.ToolResultPart, CallID: id, Text: s, SpillPath: spill}
	}
	return []history.Message{
		text(history.User, "read the logs"),
		{Role: history.Assistant, Parts: []history.Part{call("toolu_1", "workspace--read", `{"path":"a.log"}`), call("toolu_2", "workspace--write", `{"path":"b.txt","content":"…"}`)}, Usage: &history.Usage{Input: 100, Output: 20, CacheWrite: 900},
			Settings: &history.Settings{Model: "claude-sonnet-4-5", System: "3f2a9b7c1d0e5f6a7b8c9d0e1f2a3b4c", Tools: "9e8d7c6b5a4f3e2d1c0b", Cache: "marks"}},
		{Role: history.User, Parts: []history.Part{res("toolu_1", "the first log, cut", ".myelin/tool-results/2026-12-03-toolu_1.txt"), res("toolu_2", "wrote b.txt", "")}},
		{Role: history.Assistant, Parts: []history.Part{call("toolu_3", "shell--run", `{"command":"ls"}`)}},
		{Role: history.User, Parts: []history.Part{{Type: history.ToolResultPart, CallID: "toolu_3", Text: "ls: denied", IsError: true}}},
		{Role: history.Context, Edit: &history.Edit{
			Cleared: []history.Cleared{
				{Msg: 2, CallID: "toolu_1", Text: "[myelin: cleared]", Path: ".myelin/tool-results/2026-12-03-toolu_1.txt", Chars: 40000, Images: 1},
				{Msg: 1, CallID: "toolu_2", Input: true, Text: `{"myelin_cleared":"…"}`, Path: ".myelin/tool-results/cleared-toolu_2-input.json", Chars: 8000},
				{Msg: 4, CallID: "toolu_3", Text: "[myelin: an error result (1,234 characters of it were here) was cleared here to save room in the context window; it could not be kept: there is no writable workspace to keep it in.]", Chars: 1234},
			},
			Why: "over the high mark", Before: 27000, After: 12000,
		}},
		text(history.Assistant, "The logs say little."),
		{Role: history.Context, Edit: &history.Edit{Summary: &history.Summary{Through: 6, Text: "The user asked to read the logs; a.log was read.", Usage: &history.Usage{Input: 5000, Output: 300}}, Why: "clearing results was not enough"}},
		text(history.User, "and now?"),
	}
}

// storeConversation writes msgs, as they are, as conversation id in the
// default store of workspace dir.
func storeConversation(t *testing.T, dir, id string, msgs []history.Message) {
	t.Helper()
	s := openWorkspaceStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, history.Conversation{ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, id, msgs...); err != nil {
		t.Fatal(err)
	}
}

// openWorkspaceStore opens the default store of workspace dir, made if it
// is not there yet; the caller closes it.
func openWorkspaceStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	path, err := defaultStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("opening the store of workspace %s: %v", dir, err)
	}
	return s
}

// golden compares got with testdata/NAME, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (go test -run %s -update rewrites it):\n%s", path, t.Name(), got)
	}
}

var headerTime = regexp.MustCompile(`(?m)^(── \d+ \w+)  \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

func TestHistoryShowMarksClearedResultsAndSummariesWhereTheyStand(t *testing.T) {
	dir := workspaceWith(t, nil)
	storeConversation(t, dir, "c1", contextConversation())
	out, errOut, code := cli(t, "history", "show", "c1", "--workspace", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := len(headerTime.FindAllString(out, -1)); n != len(contextConversation()) {
		t.Fatalf("%d numbered headers with a time, want %d:\n%s", n, len(contextConversation()), out)
	}
	golden(t, "history_show_context.txt", headerTime.ReplaceAllString(out, "$1  TIME"))
}

func TestHistoryShowJSONGivesContextRecordsAsStored(t *testing.T) {
	dir := workspaceWith(t, nil)
	want := contextConversation()
	storeConversation(t, dir, "c1", want)
	out, errOut, code := cli(t, "history", "show", "--json", "c1", "--workspace", dir)
	var got []history.Message
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		got[i].Time = want[i].Time
	}
	// the same values: the indented output spaces out the calls' inputs,
	// which marshal back compact
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
	if !strings.Contains(out, `"role": "context"`) || !strings.Contains(out, `"cleared": [`) || !strings.Contains(out, `"settings": {`) {
		t.Fatalf("the records' fields are not in the JSON:\n%s", out)
	}
}

func TestHistoryListPassesOverRecordsBeforeTheFirstPrompt(t *testing.T) {
	dir := workspaceWith(t, nil)
	storeConversation(t, dir, "c1", contextConversation())
	out, _, code := cli(t, "history", "list", "--workspace", dir)
	if code != 0 || !strings.HasSuffix(out, "\tread the logs\n") {
		t.Fatalf("exit %d, list %q", code, out)
	}
}

func TestTheTokenLineGivesTheLastRequestAgainstTheWindowAndTheCacheHits(t *testing.T) {
	dir := workspaceWith(t, map[string]string{"a.txt": "alpha\n"})
	fakeAnthropic(t,
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 1500, CacheWrite: 20000, Output: 300},
		providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "toolu_2", Name: "workspace--read", Input: `{"path":"a.txt"}`}}, Input: 456, CacheRead: 20000, CacheWrite: 1500, Output: 45},
		providertest.Step{Text: "alpha, twice", Input: 1000, CacheRead: 21500, CacheWrite: 956, Output: 2000})
	_, errOut, code := cli(t, "run", "--workspace", dir, "--context-window", "40000", "read a.txt twice")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	// last: 1,000 + 21,500 + 956 = 23,456 of 40,000 = 58.6%; turn input
	// 1,500+20,000 + 456+20,000+1,500 + 1,000+21,500+956 = 66,912, of
	// which 41,500 (62%) read from the cache and 22,456 written to it;
	// at claude-sonnet-4-5's $3 input, $15 output, $0.30 cache reads and
	// $3.75 cache writes per million: 1,500*3 + 300*15 + 20,000*3.75 =
	// 84,000, 456*3 + 45*15 + 20,000*0.3 + 1,500*3.75 = 13,668, 1,000*3 +
	// 2,000*15 + 21,500*0.3 + 956*3.75 = 43,035: $0.140703
	want := "tokens: last request 23,456 of the 40,000-token window (59%); turn: 66,912 input, 41,500 of it (62%) read from the cache, 22,456 written to it; 2,345 output; cost $0.1407"
	if last := lines[len(lines)-1]; last != want {
		t.Fatalf("last line\n%q, want\n%q", last, want)
	}
}

func TestTheTokenLineIsLeftOutWhenNoRequestWasAnswered(t *testing.T) {
	dir := workspaceWith(t, nil)
	fakeAnthropic(t, providertest.Step{Status: 401, ErrorMessage: "invalid x-api-key"})
	_, errOut, code := cli(t, "run", "--workspace", dir, "hello")
	if code != 1 || strings.Contains(errOut, "tokens:") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// a provider that reports no usage (an OpenAI-compatible server that
	// ignores include_usage) gets a line saying so
	s := &session{agent: &agent.Agent{Model: "claude-sonnet-4-5"}}
	if got := s.tokenLine(history.Usage{}, history.Usage{}, 0, nil); got != "tokens: the provider reported no usage" {
		t.Fatalf("no usage: %q", got)
	}
}

func TestThousandsAndPercent(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {23456, "23,456"}, {120345, "120,345"}, {1047576, "1,047,576"}, {-1234, "-1,234"}} {
		if got := thousands(tc.n); got != tc.want {
			t.Errorf("thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct{ part, whole, want int }{{23456, 40000, 59}, {1, 3, 33}, {2, 3, 67}, {5, 0, 0}, {40000, 40000, 100}} {
		if got := percent(tc.part, tc.whole); got != tc.want {
			t.Errorf("percent(%d, %d) = %d, want %d", tc.part, tc.whole, got, tc.want)
		}
	}
}

func TestContextFlagsOutOfRangeAreUsageErrorsNamingFlagAndValue(t *testing.T) {
	dir := t.TempDir()
	srv := fakeAnthropic(t, providertest.Step{Text: "never"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--context-high", "0"}, "--context-high 0: give a percent of the window less the answer's room, above 0 and at most 100 (default 80)"},
		{[]string{"--context-high", "120"}, "--context-high 120: give a percent"},
		{[]string{"--context-high=-5"}, "--context-high -5: give a percent"},
		{[]string{"--context-high", "NaN"}, "--context-high NaN: give a percent"},
		{[]string{"--context-low", "0"}, "--context-low 0: give a percent of the window less the answer's room, above 0 and at most 100 (default 50)"},
		{[]string{"--context-low", "101"}, "--context-low 101: give a percent"},
		{[]string{"--context-low", "90"}, "--context-low 90 is above --context-high 80: making room brings the request down to the low mark, so it must not be above the high mark"},
		{[]string{"--context-high", "40"}, "--context-low 50 is above --context-high 40"},
		{[]string{"--keep-rounds", "0"}, "--keep-rounds 0: at least the newest round keeps its results (give 1 or more; default 3)"},
		{[]string{"--keep-rounds=-2"}, "--keep-rounds -2: at least"},
		{[]string{"--keep-rounds", "two"}, `invalid value "two" for flag -keep-rounds`},
	} {
		for _, cmd := range []string{"run", "chat"} {
			args := append([]string{cmd, "--workspace", dir}, tc.args...)
			if cmd == "run" {
				args = append(args, "hi")
			}
			_, errOut, code := cli(t, args...)
			if code != exitUsage || !strings.Contains(errOut, "myelin "+cmd+": "+tc.want) || strings.Count(errOut, "\n") != 2 {
				t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, errOut, exitUsage, tc.want)
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent on refused flags", n)
	}
}

func TestContextFlagsSetTheAgentsPolicy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want window.Policy
	}{
		{nil, window.Policy{High: window.DefaultHigh, Low: window.DefaultLow, KeepRounds: window.DefaultKeepRounds}},
		{[]string{"--context-high", "90", "--context-low", "60", "--keep-rounds", "5"}, window.Policy{High: 0.9, Low: 0.6, KeepRounds: 5}},
		{[]string{"--context-high", "70", "--context-low", "70", "--keep-rounds", "1"}, window.Policy{High: 0.7, Low: 0.7, KeepRounds: 1}},
		{[]string{"--context-low", "12.5"}, window.Policy{High: window.DefaultHigh, Low: 0.125, KeepRounds: window.DefaultKeepRounds}},
	} {
		var f agentFlags
		fs := f.set("run")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := f.check(explicit(fs)); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		fakeAnthropic(t)
		f.workspace = t.TempDir()
		s, err := open(context.Background(), f, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		got := s.agent.Context
		s.close()
		if got != tc.want {
			t.Errorf("%q: the agent's policy is %+v, want %+v", tc.args, got, tc.want)
		}
		if err := got.Check(); err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
	}
}

func TestAContextEditIsSaidOnStderr(t *testing.T) {
	var out, errOut bytes.Buffer
	r := newReporter(&out, &errOut)
	r.event(agent.Event{Kind: agent.TextDelta, Text: "Reading"})
	r.event(agent.Event{Kind: agent.ContextEdit, Text: "cleared 12 tool results (48,000 characters) from the requests to stay within the window; each can be read again from its workspace file",
		Edit: &history.Edit{Cleared: []history.Cleared{{CallID: "toolu_1", Chars: 48000}}}})
	r.stop()
	if out.String() != "Reading\n" {
		t.Fatalf("stdout %q: the text's line is not ended before the notice", out.String())
	}
	if want := "myelin: cleared 12 tool results (48,000 characters) from the requests to stay within the window; each can be read again from its workspace file\n"; errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
}

// A run whose rounds outgrow a small window says on stderr that results
// were taken out of the requests, and history show marks them where they
// were cleared and beside each result.
func TestARunThatOutgrowsItsWindowSaysSoAndHistoryShowMarksIt(t *testing.T) {
	files := map[string]string{}
	var steps []providertest.Step
	for n := range 12 {
		name := fmt.Sprintf("f%02d.txt", n)
		var b strings.Builder
		for i := 0; b.Len() < 4000; i++ {
			fmt.Fprintf(&b, "file %d line %d: %s\n", n, i, strings.Repeat("abcdefghij", 5))
		}
		files[name] = b.String()
		steps = append(steps, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprintf("toolu_%02d", n), Name: "workspace--read", Input: fmt.Sprintf(`{"path":%q}`, name)}}})
	}
	dir := workspaceWith(t, files)
	fakeAnthropic(t, append(steps, providertest.Step{Text: "read them all"})...)
	out, errOut, code := cli(t, "run", "--workspace", dir, "--context-window", "12000", "--max-tokens", "1000", "read every file")
	if code != 0 || out != "read them all\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	said := regexp.MustCompile(`(?m)^myelin: .*took \d+ tool result\(s\) \(\d+ characters\) out of the requests`)
	if !said.MatchString(errOut) {
		t.Fatalf("stderr does not say that results were taken out:\n%s", errOut)
	}
	shown, _, code := cli(t, "history", "show", conversationID(t, errOut), "--workspace", dir)
	record := regexp.MustCompile(`(?m)^── (\d+) context  .*\n\[cleared from requests from here on: \d+ results, [\d,]+ characters; each whole in its workspace file\]\n  toolu_00  result  `).FindStringSubmatch(shown)
	if code != 0 || record == nil {
		t.Fatalf("history show has no record clearing the first result:\n%s", shown)
	}
	if !strings.Contains(shown, "[tool result toolu_00, cleared from requests at message "+record[1]+"]") {
		t.Fatalf("the first result is not marked as cleared at message %s:\n%s", record[1], shown)
	}
	if strings.Contains(shown, "[tool result toolu_11, cleared") {
		t.Fatalf("the last round's result is marked as cleared:\n%s", shown)
	}
}
