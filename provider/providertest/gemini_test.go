package providertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/myelin-run/myelin/provider/providertest"
)

// geminiSend sends contents through the SDK itself to srv, without
// retries, streaming or not, and returns the text of the answer.
func geminiSend(t *testing.T, srv *providertest.Server, stream bool, contents ...*genai.Content) (*genai.GenerateContentResponse, error) {
	t.Helper()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	off := false
	config := &genai.GenerateContentConfig{MaxOutputTokens: 100, AutomaticContinuation: &off}
	if !stream {
		return client.Models.GenerateContent(context.Background(), "gemini-test", contents, config)
	}
	var last *genai.GenerateContentResponse
	var text strings.Builder
	for resp, err := range client.Models.GenerateContentStream(context.Background(), "gemini-test", contents, config) {
		if err != nil {
			return nil, err
		}
		text.WriteString(resp.Text())
		last = resp
	}
	last.Candidates[0].Content.Parts = []*genai.Part{{Text: text.String()}}
	return last, nil
}

func TestGeminiAnswersTheSDKStreamingAndNotWithUsageAndCachedTokens(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := providertest.NewGemini(t, providertest.Step{Text: "héllo there", Input: 10, CacheRead: 30, Output: 5})
		resp, err := geminiSend(t, srv, stream, genai.NewContentFromText("hi", genai.RoleUser))
		if err != nil {
			t.Fatal(err)
		}
		u := resp.UsageMetadata
		if resp.Text() != "héllo there" || u.PromptTokenCount != 40 || u.CachedContentTokenCount != 30 || u.CandidatesTokenCount != 5 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
			t.Fatalf("stream %v: %q, usage %+v", stream, resp.Text(), u)
		}
	}
}

func TestGeminiWindowRefusesWithTheAPIsOwnWords(t *testing.T) {
	probe := providertest.NewGemini(t)
	probe.Window = 1
	text := strings.Repeat("a long prompt ", 300)
	_, _ = geminiSend(t, probe, false, genai.NewContentFromText(text, genai.RoleUser))
	n := providertest.Tokens(probe.Requests()[0])
	// the input alone counts: the answer's room does not
	fits := providertest.NewGemini(t, providertest.Step{Text: "fits"})
	fits.Window = n
	if _, err := geminiSend(t, fits, false, genai.NewContentFromText(text, genai.RoleUser)); err != nil {
		t.Fatalf("a request of exactly the window was refused: %v", err)
	}
	srv := providertest.NewGemini(t, providertest.Step{Text: "unused"})
	srv.Window = n - 1
	_, err := geminiSend(t, srv, true, genai.NewContentFromText(text, genai.RoleUser))
	var e genai.APIError
	want := fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", n, n-1)
	if !errors.As(err, &e) || e.Code != 400 || e.Status != "INVALID_ARGUMENT" || e.Message != want {
		t.Fatalf("got %v, want 400 INVALID_ARGUMENT %q", err, want)
	}
	if srv.Refused() != 1 {
		t.Fatalf("refused %d", srv.Refused())
	}
}

func TestGeminiRefusesARequestThatDropsOrChangesASignatureOfItsTurn(t *testing.T) {
	call := &genai.FunctionCall{ID: "c1", Name: "look", Args: map[string]any{}}
	user := genai.NewContentFromText("look", genai.RoleUser)
	result := &genai.Content{Role: "user", Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "look", Response: map[string]any{"output": "seen"}}}}}
	for _, tc := range []struct {
		name, sig, want string
	}{
		{"dropped", "", "Function call is missing a thought_signature in functionCall parts."},
		{"changed", "b3RoZXI=", "Corrupted thought signature."},
		{"kept", "c2ln", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewGemini(t, providertest.Step{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "look", Input: `{}`}}, GeminiSignature: "c2ln"}, providertest.Step{Text: "done"})
			resp, err := geminiSend(t, srv, false, user)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Candidates[0].Content.Parts[0]; string(got.ThoughtSignature) != "sig" {
				t.Fatalf("the call came with signature %q", got.ThoughtSignature)
			}
			model := &genai.Content{Role: "model", Parts: []*genai.Part{{FunctionCall: call}}}
			if tc.sig != "" {
				model.Parts[0].ThoughtSignature = []byte(map[string]string{"b3RoZXI=": "other", "c2ln": "sig"}[tc.sig])
			}
			_, err = geminiSend(t, srv, false, user, model, result)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("kept: %v", err)
				}
				return
			}
			var e genai.APIError
			if !errors.As(err, &e) || e.Code != 400 || !strings.HasPrefix(e.Message, tc.want) {
				t.Fatalf("got %v, want a 400 %q", err, tc.want)
			}
			// an earlier turn is not checked, as the API does not
			later := genai.NewContentFromText("next", genai.RoleUser)
			srv.Push(providertest.Step{Text: "fine"})
			if _, err := geminiSend(t, srv, false, user, model, result, genai.NewContentFromText("ok", genai.RoleModel), later); err != nil {
				t.Fatalf("an earlier turn's call was checked: %v", err)
			}
		})
	}
}

func TestGeminiLastUserTextReadsParts(t *testing.T) {
	srv := providertest.NewGemini(t)
	var got string
	srv.Respond = func(r providertest.Request) providertest.Step {
		got = r.LastUserText()
		return providertest.Step{Text: "x"}
	}
	if _, err := geminiSend(t, srv, false, genai.NewContentFromText("first", genai.RoleUser), genai.NewContentFromText("a", genai.RoleModel),
		&genai.Content{Role: "user", Parts: []*genai.Part{{Text: "second"}, {Text: "third"}}}); err != nil {
		t.Fatal(err)
	}
	if got != "second\nthird" {
		t.Fatalf("LastUserText %q", got)
	}
}
