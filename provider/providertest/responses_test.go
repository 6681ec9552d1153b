package providertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	osdk "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	oai "github.com/openai/openai-go/v3/responses"

	"github.com/myelin-run/myelin/provider/providertest"
)

// responsesClient is the SDK's client pointed at srv, no retries.
func responsesClient(srv *providertest.Server) osdk.Client {
	return osdk.NewClient(ooption.WithAPIKey("k"), ooption.WithBaseURL(srv.URL), ooption.WithMaxRetries(0))
}

func userInput(text string) oai.ResponseNewParamsInputUnion {
	return oai.ResponseNewParamsInputUnion{OfInputItemList: oai.ResponseInputParam{oai.ResponseInputItemParamOfMessage(text, oai.EasyInputMessageRoleUser)}}
}

var responsesStep = providertest.Step{
	Reasoning: "Think — then read.",
	Text:      "Reading a.txt.",
	ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "workspace--read", Input: `{"path":"a.txt"}`}},
	Input:     10, Output: 20, CacheRead: 30,
}

// checkOutput checks a response's output items and usage as the SDK
// decoded them.
func checkOutput(t *testing.T, r oai.Response, summary bool) {
	t.Helper()
	if len(r.Output) != 3 || r.Status != "completed" {
		t.Fatalf("status %q, %d items", r.Status, len(r.Output))
	}
	rs, msg, call := r.Output[0], r.Output[1], r.Output[2]
	if rs.Type != "reasoning" || rs.EncryptedContent != providertest.Encrypted("Think — then read.") || (len(rs.Summary) == 1) != summary {
		t.Fatalf("reasoning %s", rs.RawJSON())
	}
	if msg.Type != "message" || msg.Content[0].Text != "Reading a.txt." || call.Type != "function_call" || call.CallID != "call_1" || call.Name != "workspace--read" {
		t.Fatalf("items %s %s", msg.RawJSON(), call.RawJSON())
	}
	if r.Usage.InputTokens != 40 || r.Usage.InputTokensDetails.CachedTokens != 30 || r.Usage.OutputTokens != 20 {
		t.Fatalf("usage %s", r.Usage.RawJSON())
	}
}

func TestResponsesAnswersDecodeWithTheSDK(t *testing.T) {
	for _, summary := range []bool{false, true} {
		srv := providertest.NewResponses(t, responsesStep, responsesStep)
		c := responsesClient(srv)
		p := oai.ResponseNewParams{Model: "gpt-test", Input: userInput("hi")}
		if summary {
			p.Reasoning.Summary = "auto"
		}
		r, err := c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkOutput(t, *r, summary)
		stream := c.Responses.NewStreaming(context.Background(), p)
		var kinds []string
		var text, thought strings.Builder
		var done oai.Response
		for stream.Next() {
			ev := stream.Current()
			kinds = append(kinds, ev.Type)
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.reasoning_summary_text.delta":
				thought.WriteString(ev.Delta)
			case "response.completed":
				done = ev.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if kinds[0] != "response.created" || kinds[len(kinds)-1] != "response.completed" || text.String() != "Reading a.txt." {
			t.Fatalf("events %v, text %q", kinds, text.String())
		}
		if want := map[bool]string{true: "Think — then read.", false: ""}[summary]; thought.String() != want {
			t.Fatalf("summary streamed %q", thought.String())
		}
		checkOutput(t, done, summary)
	}
}

func TestResponsesWindowRefusesAsTheAPIDoes(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Text: "never"})
	srv.Window = 50
	c := responsesClient(srv)
	p := oai.ResponseNewParams{Model: "gpt-test", Input: userInput("short"), MaxOutputTokens: osdk.Int(100)}
	// not streamed: a 400 with the error object
	_, err := c.Responses.New(context.Background(), p)
	var apiErr *osdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" || apiErr.Param != "input" {
		t.Fatalf("err %v", err)
	}
	// streamed: the response starts, then an error event ends it
	stream := c.Responses.NewStreaming(context.Background(), p)
	n := 0
	for stream.Next() {
		n++
	}
	var se *ssestream.StreamError
	if !errors.As(stream.Err(), &se) || n != 2 || !strings.Contains(se.Error(), "context_length_exceeded") {
		t.Fatalf("after %d events: %v", n, stream.Err())
	}
	// the answer's room counts: the same request with room to spare fits
	srv.Push(providertest.Step{Text: "fits"})
	p.MaxOutputTokens = osdk.Int(1)
	if _, err := c.Responses.New(context.Background(), p); err != nil {
		t.Fatalf("a request within the window: %v", err)
	}
	if srv.Refused() != 2 {
		t.Fatalf("%d refused", srv.Refused())
	}
}

// postResponses sends body to the fake's Responses endpoint and returns
// the status and the response body.
func postResponses(t *testing.T, srv *providertest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestResponsesRefusesAReasoningItemItDidNotIssue(t *testing.T) {
	srv := providertest.NewResponses(t, providertest.Step{Text: "ok"}, providertest.Step{Text: "ok"})
	item := func(enc, summary string) string {
		return fmt.Sprintf(`{"model":"m","input":[{"type":"reasoning","summary":[%s],"encrypted_content":%q},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}]}`, summary, enc)
	}
	good := providertest.Encrypted("a thought")
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"issued", item(good, ""), 200},
		{"issued with its summary", item(good, `{"type":"summary_text","text":"a thought"}`), 200},
		{"changed", item(good+"x", ""), 400},
		{"another summary", item(good, `{"type":"summary_text","text":"another"}`), 400},
		{"not issued", item("gAAAAABnope", ""), 400},
	} {
		status, body := postResponses(t, srv, tc.body)
		if status != tc.status || (status == 400 && !strings.Contains(body, "invalid_encrypted_content")) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
}

func TestResponsesCacheReportsTheSharedPrefixAsCachedTokens(t *testing.T) {
	srv := providertest.NewResponses(t)
	srv.Cache = true
	srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
	long := strings.Repeat("a long prompt ", 200)
	first := `{"model":"m","input":[{"type":"message","role":"user","content":"` + long + `"}],"max_output_tokens":10}`
	second := `{"model":"m","input":[{"type":"message","role":"user","content":"` + long + `"},{"type":"message","role":"user","content":"more"}],"max_output_tokens":10}`
	var usage struct {
		Usage struct {
			Input   int `json:"input_tokens"`
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	postResponses(t, srv, first)
	_, body := postResponses(t, srv, second)
	if err := json.Unmarshal([]byte(body), &usage); err != nil {
		t.Fatal(err)
	}
	if usage.Usage.Input != providertest.Tokens([]byte(second)) || usage.Usage.Details.Cached < len(first)/4-20 {
		t.Fatalf("usage %+v, request of %d tokens", usage.Usage, providertest.Tokens([]byte(second)))
	}
}

func TestResponsesRequestsAreReadForRespond(t *testing.T) {
	srv := providertest.NewResponses(t)
	var got providertest.Request
	srv.Respond = func(r providertest.Request) providertest.Step { got = r; return providertest.Step{Text: "ok"} }
	body := `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Write that summary now"}]},` +
		`{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"result"}],"max_output_tokens":77}`
	postResponses(t, srv, body)
	if got.LastUserText() != "Write that summary now" || got.MaxTokens != 77 || len(got.Messages) != 3 || !bytes.Equal(got.Body, []byte(body)) {
		t.Fatalf("read %+v (last user text %q)", got, got.LastUserText())
	}
}
