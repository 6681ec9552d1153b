package openai

import (
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
)

// records are Context records as the store holds them (an Edit, the
// Settings), and one that carries a part all the same: a decision is never
// sent, whatever it holds.
func records() []history.Message {
	return []history.Message{
		{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{{CallID: "call_1", Text: "[cleared]", Chars: 20}}, Why: "over the high mark"}},
		{Role: history.Context, Settings: &history.Settings{Model: "gpt-test", System: "ab12", Tools: "cd34", Cache: cacheSettings}},
		{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "a record is not a message"}}},
	}
}

func TestContextRecordsAreNotSentAsIfAbsent(t *testing.T) {
	twoPrompts := sampleRequest()
	twoPrompts.Messages = append(twoPrompts.Messages,
		history.Message{Role: history.User, Parts: []history.Part{{Type: history.TextPart, Text: "and then?"}}})
	for name, tc := range map[string]struct {
		req provider.Request
		at  int
	}{
		"first":                             {sampleRequest(), 0},
		"between an answer and its results": {sampleRequest(), 2},
		"last":                              {sampleRequest(), len(sampleRequest().Messages)},
		"between two user messages":         {twoPrompts, len(twoPrompts.Messages) - 1},
	} {
		want := marshal(t, tc.req)
		with := tc.req
		with.Messages = append(append(append([]history.Message{}, tc.req.Messages[:tc.at]...), records()...), tc.req.Messages[tc.at:]...)
		if got := marshal(t, with); string(got) != string(want) {
			t.Errorf("%s: a record changes the request:\n got %s\nwant %s", name, got, want)
		}
	}
}

func TestTheWireSaysHowItMarksTheCache(t *testing.T) {
	var p provider.Provider = &Provider{}
	if got, want := provider.CacheSettings(p), "openai: automatic prefix caching (nothing marked)"; got != want {
		t.Fatalf("CacheSettings = %q, want %q", got, want)
	}
}
