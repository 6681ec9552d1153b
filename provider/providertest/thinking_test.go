package providertest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider/providertest"
)

// post sends body to the fake's Messages endpoint and returns the status
// and the response body.
func post(t *testing.T, srv *providertest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTheAnthropicFakeStreamsThinkingWithTheAPIsEvents(t *testing.T) {
	stream := providertest.AnthropicStream(providertest.Step{
		Thinking:  []providertest.Thinking{{Text: "abcd", Signature: "S1"}, {Redacted: "R1"}, {Text: "mid", Signature: "S2", BeforeCall: 1}},
		Text:      "hi",
		ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "x", Input: "{}"}, {ID: "t2", Name: "y", Input: "{}"}},
	})
	for _, want := range []string{
		`{"content_block":{"thinking":"","type":"thinking"},"index":0,"type":"content_block_start"}`,
		`{"delta":{"thinking":"ab","type":"thinking_delta"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"signature":"S1","type":"signature_delta"},"index":0,"type":"content_block_delta"}`,
		`{"content_block":{"data":"R1","type":"redacted_thinking"},"index":1,"type":"content_block_start"}`,
		`{"content_block":{"text":"","type":"text"},"index":2,"type":"content_block_start"}`,
		`{"content_block":{"id":"t1","input":{},"name":"x","type":"tool_use"},"index":3,"type":"content_block_start"}`,
		`{"delta":{"signature":"S2","type":"signature_delta"},"index":4,"type":"content_block_delta"}`,
		`{"content_block":{"id":"t2","input":{},"name":"y","type":"tool_use"},"index":5,"type":"content_block_start"}`,
	} {
		if !strings.Contains(stream, want) {
			t.Errorf("the stream lacks %s:\n%s", want, stream)
		}
	}
}

func TestTheAnthropicFakeRefusesDroppedOrChangedThinkingAsTheAPIDoes(t *testing.T) {
	answer := providertest.Step{
		Thinking:  []providertest.Thinking{{Text: "I should read.", Signature: "SIG1"}, {Redacted: "RED1"}},
		ToolCalls: []providertest.ToolCall{{ID: "t1", Name: "read", Input: "{}"}},
	}
	thinking := `{"type":"thinking","thinking":"I should read.","signature":"SIG1"}`
	redacted := `{"type":"redacted_thinking","data":"RED1"}`
	use := `{"type":"tool_use","id":"t1","name":"read","input":{}}`
	request := func(assistant ...string) string {
		return `{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"go"}]},` +
			`{"role":"assistant","content":[` + strings.Join(assistant, ",") + `]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	}
	for _, c := range []struct {
		name, body, refusal string
	}{
		{"kept whole", request(thinking, redacted, use), ""},
		{"dropped", request(use), fmt.Sprintf(providertest.MissingThinking, 1, "tool_use")},
		{"thinking changed", request(strings.Replace(thinking, "read.", "read!", 1), redacted, use), fmt.Sprintf(providertest.InvalidSignature, 1, 0)},
		{"signature changed", request(strings.Replace(thinking, "SIG1", "SIG2", 1), redacted, use), fmt.Sprintf(providertest.InvalidSignature, 1, 0)},
		{"redacted dropped", request(thinking, use), fmt.Sprintf(providertest.InvalidSignature, 1, 1)},
		{"redacted changed", request(thinking, strings.Replace(redacted, "RED1", "RED2", 1), use), fmt.Sprintf(providertest.InvalidRedacted, 1, 1)},
		{"reordered", request(redacted, thinking, use), fmt.Sprintf(providertest.InvalidSignature, 1, 0)},
		{"thinking off", strings.Replace(request(use), `"thinking":{"type":"enabled","budget_tokens":1024},`, "", 1), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t, answer, providertest.Step{Text: "done"})
			srv.CheckThinking = true
			if status, _ := post(t, srv, `{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"go"}]}`); status != 200 {
				t.Fatalf("the first request: %d", status)
			}
			status, body := post(t, srv, c.body)
			if c.refusal == "" {
				if status != 200 {
					t.Fatalf("refused: %d %s", status, body)
				}
				return
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type, Message string
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &e)
			if status != 400 || e.Error.Type != "invalid_request_error" || e.Error.Message != c.refusal {
				t.Fatalf("got %d %s\nwant 400 %s", status, body, c.refusal)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d requests recorded", n)
			}
			// a refused request takes no step: the next one gets it
			if status, _ := post(t, srv, request(thinking, redacted, use)); status != 200 {
				t.Fatalf("the request kept whole after a refusal: %d", status)
			}
		})
	}
}
