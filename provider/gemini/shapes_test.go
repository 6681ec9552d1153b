package gemini

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/myelin-run/myelin/provider/providertest"
)

// The SDK's own encoding of the sample conversation, built from its typed
// params (genai.Content, genai.Part, genai.FunctionDeclaration) and sent by
// its own GenerateContent: the contents this package writes are the same
// bytes, and the whole body the same JSON (the SDK sorts a schema's keys;
// this package sends the schema's bytes as they are).
func TestBodyMatchesTheSDKsOwnEncoding(t *testing.T) {
	srv := providertest.NewGemini(t, providertest.Step{Text: "ok"})
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	req := sampleRequest()
	req.Model = "gemini-3-flash-preview" // images inside the function response
	var tools []*genai.FunctionDeclaration
	for _, tool := range req.Tools {
		tools = append(tools, &genai.FunctionDeclaration{Name: tool.Name, Description: tool.Description, ParametersJsonSchema: json.RawMessage(tool.InputSchema)})
	}
	text := func(s string) *genai.Part { return &genai.Part{Text: s} }
	contents := []*genai.Content{
		{Role: "user", Parts: []*genai.Part{text("read a.txt")}},
		{Role: "model", Parts: []*genai.Part{
			{Text: "Reading it.", Thought: true},
			text("Reading."),
			{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "workspace--read", Args: map[string]any{"path": "a.txt"}}, ThoughtSignature: []byte("signature one")},
			{FunctionCall: &genai.FunctionCall{Name: "workspace--read", Args: map[string]any{"path": "img.png"}}},
		}},
		{Role: "user", Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{ID: "call_1", Name: "workspace--read", Response: map[string]any{"output": "line \"one\"\n\ttwo <&>\n"}}},
			{FunctionResponse: &genai.FunctionResponse{Name: "workspace--read", Response: map[string]any{"output": "[image: image/png, 4 bytes]"},
				Parts: []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "image/png", Data: []byte("\x89PNG")}}}}},
		}},
		{Role: "model", Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "call_3", Name: "workspace--read", Args: map[string]any{"path": "missing"}}, ThoughtSignature: []byte("signature two")}}},
		{Role: "user", Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "call_3", Name: "workspace--read", Response: map[string]any{"error": "missing does not exist in the workspace"}}}}},
		{Role: "model", Parts: []*genai.Part{{Text: "It is missing.", ThoughtSignature: []byte("signature one")}}},
		{Role: "user", Parts: []*genai.Part{text("thanks")}},
	}
	off := false
	_, err = client.Models.GenerateContent(context.Background(), req.Model, contents, &genai.GenerateContentConfig{
		SystemInstruction:     &genai.Content{Parts: []*genai.Part{text(req.System)}},
		MaxOutputTokens:       int32(req.MaxTokens),
		Tools:                 []*genai.Tool{{FunctionDeclarations: tools}},
		AutomaticContinuation: &off,
	})
	if err != nil {
		t.Fatal(err)
	}
	sdkBody := srv.Requests()[0]
	ours := body(t, req)
	member := func(b []byte) string {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return string(v["contents"])
	}
	if member(ours) != member(sdkBody) {
		t.Fatalf("contents differ:\nours %s\nsdk  %s", member(ours), member(sdkBody))
	}
	var a, b any
	if err := json.Unmarshal(ours, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sdkBody, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("bodies differ:\nours %s\nsdk  %s", ours, sdkBody)
	}
}
