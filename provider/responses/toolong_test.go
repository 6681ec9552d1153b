package responses

import (
	"context"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

func TestTooLongReadsTheAPIsErrorObject(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}`, true},
		{`{"type":"invalid_request_error","code":null,"message":"Your input exceeds the context window of this model."}`, true},
		{`{"type":"invalid_request_error","code":"invalid_encrypted_content","message":"The encrypted content gAAA could not be verified."}`, false},
		{`{"type":"invalid_request_error","code":"string_above_max_length","message":"Invalid 'prompt_cache_key': string too long."}`, false},
		{`not json`, false},
	} {
		if got := tooLong([]byte(tc.body)) != nil; got != tc.want {
			t.Errorf("tooLong(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

// TestARequestOverTheWindowIsATooLongError sends a request the fake's
// window refuses: not streamed, a 400; streamed, an error event after
// response.created, as the API sends them.
func TestARequestOverTheWindowIsATooLongError(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewResponses(t, providertest.Step{Text: "never"})
		srv.Window = 100
		_, err := newProvider(t, srv, Config{NoStream: noStream}).Complete(context.Background(), sampleRequest(), nil)
		tl, ok := provider.IsTooLong(err)
		if !ok || !strings.Contains(err.Error(), "Your input exceeds the context window") {
			t.Fatalf("noStream %v: %v", noStream, err)
		}
		if tl.Tokens != 0 || tl.Limit != 0 || len(srv.Requests()) != 1 || srv.Refused() != 1 {
			t.Fatalf("noStream %v: counts %+v (the API gives none), %d requests", noStream, tl, len(srv.Requests()))
		}
	}
}

func TestAFailedResponseOverTheWindowIsATooLongErrorOnlyBeforeOutput(t *testing.T) {
	failed := "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"r\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n"
	delta := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"output_index\":0,\"content_index\":0,\"item_id\":\"m\",\"delta\":\"Hi\"}\n\n"
	errEvent := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\",\"param\":\"input\"}}\n\n"
	for _, tc := range []struct {
		name, raw string
		want      bool
	}{
		{"response.failed first", failed, true},
		{"response.failed after text", delta + failed, false},
		{"error event after text", delta + errEvent, false},
		{"error event of the SDK's documented shape", "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\",\"param\":\"input\"}\n\n", true},
	} {
		srv := providertest.NewResponses(t, providertest.Step{Raw: tc.raw})
		_, err := newProvider(t, srv, Config{}).Complete(context.Background(), sampleRequest(), nil)
		if _, ok := provider.IsTooLong(err); err == nil || ok != tc.want {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestContextRecordsAreNotSentAsIfAbsent(t *testing.T) {
	records := []history.Message{
		{Role: history.Context, Edit: &history.Edit{Cleared: []history.Cleared{{CallID: "call_1", Text: "[cleared]", Chars: 20}}, Why: "over the high mark"}},
		{Role: history.Context, Settings: &history.Settings{Model: "gpt-test", Cache: cacheSettings}},
		{Role: history.Context, Parts: []history.Part{{Type: history.TextPart, Text: "a record is not a message"}}},
	}
	for _, at := range []int{0, 1, 2, 3} {
		req := sampleRequest()
		want := body(t, req, Config{}, true)
		req.Messages = append(append(append([]history.Message{}, req.Messages[:at]...), records...), req.Messages[at:]...)
		if got := body(t, req, Config{}, true); string(got) != string(want) {
			t.Errorf("records at %d change the request:\n got %s\nwant %s", at, got, want)
		}
	}
}

func TestTheWireSaysHowItMarksTheCache(t *testing.T) {
	var p provider.Provider = &Provider{}
	if got := provider.CacheSettings(p); got != "openai-responses: automatic prefix caching, prompt_cache_key per conversation" {
		t.Fatalf("CacheSettings = %q", got)
	}
}
