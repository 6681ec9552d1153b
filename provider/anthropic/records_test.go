package anthropic

import (
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// records are Context records as the store holds them (an Edit, the
// Settings), and one that carries a part all the same: a decision is never
// sent, whatever it holds.
func records() []history.Message {
	return []history.Message{
		{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{{CallID: "toolu_1", Text: "[cleared]", Chars: 20}}, Why: "over the high mark"}},
		{Role: history.Context, Settings: &history.Settings{Model: "claude-test", System: "ab12", Tools: "cd34", Cache: cacheSettings}},
		{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "a record is not a message"}}},
	}
}

// withRecords is msgs with the records inserted before message at.
func withRecords(msgs []history.Message, at int) []history.Message {
	out := append([]history.Message{}, msgs[:at]...)
	out = append(out, records()...)
	return append(out, msgs[at:]...)
}

func TestContextRecordsAreNotSentAsIfAbsent(t *testing.T) {
	twoPrompts := providertest.SampleRequest()
	twoPrompts.Messages = append(twoPrompts.Messages,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and then?"}}})
	for name, tc := range map[string]struct {
		req provider.Request
		at  int
	}{
		"first":                                {providertest.SampleRequest(), 0},
		"between an answer and its results":    {providertest.SampleRequest(), 2},
		"last":                                 {providertest.SampleRequest(), len(providertest.SampleRequest().Messages)},
		"between two user messages of a group": {twoPrompts, len(twoPrompts.Messages) - 1},
	} {
		want := marshal(t, tc.req)
		with := tc.req
		with.Messages = withRecords(tc.req.Messages, tc.at)
		if got := marshal(t, with); string(got) != string(want) {
			t.Errorf("%s: a record changes the request:\n got %s\nwant %s", name, got, want)
		}
	}
}

// The words are stored with conversations and compared on resume: they
// change only when Body's marking does (TestCacheBreakpointsOnTheStablePrefixAndRolling).
func TestTheWireSaysHowItMarksTheCache(t *testing.T) {
	var p provider.Provider = &Provider{}
	want := "anthropic: cache_control ephemeral on the last tool, the system prompt and the last block of the two newest user messages (4 breakpoints at most)"
	if got := provider.CacheSettings(p); got != want {
		t.Fatalf("CacheSettings = %q, want %q", got, want)
	}
}
