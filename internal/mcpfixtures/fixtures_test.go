package mcpfixtures

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// suiteVersion is the protocol version the pinned conformance suite's
// client speaks. The SDK's client speaks 2026-07-28 by default, where a
// server may not send requests (sampling, elicitation) while serving one,
// and log levels travel with each request: the fixtures answer the suite,
// so they are tested at its version.
const suiteVersion = "2025-11-25"

// connect serves the fixtures in memory, as mcpserver does with
// --conformance-fixtures, to a client made with opts speaking the suite's
// protocol version.
func connect(t *testing.T, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return connectAt(t, suiteVersion, opts)
}

// connectAt is connect with a client speaking the protocol version given.
func connectAt(t *testing.T, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := sdk.NewServer(&sdk.Implementation{Name: "fixtures", Version: "test"}, &sdk.ServerOptions{CompletionHandler: Complete})
	Register(srv)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "test"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls the tool name with args and fails the test on a protocol
// error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// texts are the texts of content, in order; other content is named by
// its type.
func texts(content []sdk.Content) []string {
	var out []string
	for _, c := range content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
			continue
		}
		b, _ := json.Marshal(c)
		var typed struct{ Type string }
		_ = json.Unmarshal(b, &typed)
		out = append(out, "<"+typed.Type+">")
	}
	return out
}

func TestFixturesOfferEveryNameTheSuitesServerScenariosCall(t *testing.T) {
	cs := connect(t, nil)
	ctx := context.Background()
	var tools, resources, templates, prompts []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl.Name)
		if tl.Description == "" {
			t.Errorf("tool %s has no description (tools-list requires one)", tl.Name)
		}
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.URI)
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, r.URITemplate)
	}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
		if p.Description == "" {
			t.Errorf("prompt %s has no description (prompts-list requires one)", p.Name)
		}
	}
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"tools", tools, []string{"json_schema_2020_12_tool", "test_audio_content", "test_elicitation", "test_elicitation_sep1034_defaults",
			"test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling", "test_image_content", "test_multiple_content_types",
			"test_reconnection", "test_sampling", "test_simple_text", "test_tool_with_logging", "test_tool_with_progress"}},
		{"resources", resources, []string{"test://static-binary", "test://static-text", "test://watched-resource"}},
		{"resource templates", templates, []string{"test://template/{id}/data"}},
		{"prompts", prompts, []string{"test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}},
	} {
		slices.Sort(tc.got)
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

func TestFixedToolsGiveTheContentTheScenariosDescribe(t *testing.T) {
	cs := connect(t, nil)
	for _, tc := range []struct {
		tool    string
		want    []string // texts, or <type> for other content
		isError bool
	}{
		{"test_simple_text", []string{simpleText}, false},
		{"test_image_content", []string{"<image>"}, false},
		{"test_audio_content", []string{"<audio>"}, false},
		{"test_embedded_resource", []string{"<resource>"}, false},
		{"test_multiple_content_types", []string{mixedText, "<image>", "<resource>"}, false},
		{"test_error_handling", []string{errorText}, true},
	} {
		res := call(t, cs, tc.tool, map[string]any{})
		if got := texts(res.Content); !slices.Equal(got, tc.want) || res.IsError != tc.isError {
			t.Errorf("%s: got %q (isError %v), want %q (isError %v)", tc.tool, got, res.IsError, tc.want, tc.isError)
		}
	}

	mixed := call(t, cs, "test_multiple_content_types", nil).Content
	if r := mixed[2].(*sdk.EmbeddedResource).Resource; r.URI != "test://mixed-content-resource" || r.MIMEType != "application/json" || r.Text != mixedResourceJSON {
		t.Errorf("the mixed content's resource: got %+v", r)
	}
	embedded := call(t, cs, "test_embedded_resource", nil).Content[0].(*sdk.EmbeddedResource).Resource
	if embedded.URI != "test://embedded-resource" || embedded.MIMEType != "text/plain" || embedded.Text != embeddedText {
		t.Errorf("the embedded resource: got %+v", embedded)
	}
}

func TestTheImageIsOneRedPixelAndTheAudioAWAVFile(t *testing.T) {
	cs := connect(t, nil)
	im := call(t, cs, "test_image_content", nil).Content[0].(*sdk.ImageContent)
	img, err := png.Decode(bytes.NewReader(im.Data))
	if err != nil {
		t.Fatalf("the image is not a PNG: %v", err)
	}
	if r, g, b, a := img.At(0, 0).RGBA(); img.Bounds().Dx() != 1 || img.Bounds().Dy() != 1 || r != 0xffff || g != 0 || b != 0 || a != 0xffff {
		t.Errorf("the image: %v, pixel %v; want one opaque red pixel", img.Bounds(), img.At(0, 0))
	}
	if im.MIMEType != "image/png" {
		t.Errorf("the image's type: got %q, want image/png", im.MIMEType)
	}
	au := call(t, cs, "test_audio_content", nil).Content[0].(*sdk.AudioContent)
	d := au.Data
	if au.MIMEType != "audio/wav" || len(d) < 44 || string(d[0:4]) != "RIFF" || string(d[8:16]) != "WAVEfmt " || string(d[36:40]) != "data" {
		t.Fatalf("the audio is not a WAV file: type %q, header %q", au.MIMEType, d[:min(len(d), 44)])
	}
	if size := int(d[4]) | int(d[5])<<8 | int(d[6])<<16 | int(d[7])<<24; size != len(d)-8 {
		t.Errorf("the WAV's RIFF size says %d bytes follow, %d do", size, len(d)-8)
	}
}

// notified waits for n notifications on ch: they may reach the client
// after the call's result. The bound only keeps a lost one from hanging
// the test.
func notified[T any](t *testing.T, ch <-chan T, n int) []T {
	t.Helper()
	var got []T
	bound := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-bound:
			t.Fatalf("got %d notifications, want %d: %v", len(got), n, got)
		}
	}
	return got
}

func TestLoggingToolSendsThreeInfoMessagesAtTheClientsLevel(t *testing.T) {
	for _, level := range []sdk.LoggingLevel{"debug", "info"} {
		t.Run(string(level), func(t *testing.T) {
			logs := make(chan *sdk.LoggingMessageParams, 10)
			cs := connect(t, &sdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
				logs <- r.Params
			}})
			if err := cs.SetLoggingLevel(context.Background(), &sdk.SetLoggingLevelParams{Level: level}); err != nil {
				t.Fatal(err)
			}
			call(t, cs, "test_tool_with_logging", nil)
			var got []any
			for _, p := range notified(t, logs, 3) {
				if p.Level != "info" {
					t.Errorf("log message %v at level %s, want info", p.Data, p.Level)
				}
				got = append(got, p.Data)
			}
			want := []any{"Tool execution started", "Tool processing data", "Tool execution completed"}
			if !slices.Equal(got, want) {
				t.Errorf("log messages at level %s: got %q, want %q", level, got, want)
			}
		})
	}
}

func TestProgressToolReportsToTheTokenGivenAndToNoneWithout(t *testing.T) {
	progress := make(chan *sdk.ProgressNotificationParams, 10)
	cs := connect(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		progress <- r.Params
	}})
	// The call without a token first: what it reported would come before
	// the second call's notifications.
	res := call(t, cs, "test_tool_with_progress", nil)
	if txt := texts(res.Content); len(txt) != 1 || !strings.Contains(txt[0], "no progress token") {
		t.Errorf("the call without a token answered %q; want it to say no progress was reported", txt)
	}
	p := &sdk.CallToolParams{Name: "test_tool_with_progress"}
	p.SetProgressToken("tok")
	if _, err := cs.CallTool(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, n := range notified(t, progress, 3) {
		if n.ProgressToken != "tok" || n.Total != 100 {
			t.Errorf("progress notification %+v: want token tok, total 100", n)
		}
		got = append(got, n.Progress)
	}
	if !slices.Equal(got, []float64{0, 50, 100}) {
		t.Errorf("progress reported: got %v, want [0 50 100], all from the call with the token", got)
	}
}

func TestSamplingToolAsksTheClientsModelWithThePrompt(t *testing.T) {
	var asked *sdk.CreateMessageParams
	cs := connect(t, &sdk.ClientOptions{CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		asked = r.Params
		return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "forty-two"}}, nil
	}})
	res := call(t, cs, "test_sampling", map[string]any{"prompt": "the answer?"})
	if got := texts(res.Content); res.IsError || !slices.Equal(got, []string{"LLM response: forty-two"}) {
		t.Errorf("test_sampling answered %q (isError %v), want the model's answer", got, res.IsError)
	}
	if asked == nil || asked.MaxTokens != 100 || len(asked.Messages) != 1 || asked.Messages[0].Role != "user" ||
		texts([]sdk.Content{asked.Messages[0].Content})[0] != "the answer?" {
		t.Errorf("sampling/createMessage asked %+v; want one user message with the prompt, maxTokens 100", asked)
	}
}

func TestAskingToolsFailWithAReasonWhenTheClientCannotOrTheArgumentIsMissing(t *testing.T) {
	plain := connect(t, nil) // no sampling handler, no elicitation handler: neither capability
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"test_sampling", map[string]any{"prompt": "p"}, "no sampling capability"},
		{"test_elicitation", map[string]any{"message": "m"}, "does not support elicitation"},
		{"test_elicitation_sep1034_defaults", nil, "does not support elicitation"},
		{"test_sampling", map[string]any{}, `needs the string argument "prompt"`},
		{"test_elicitation", map[string]any{"message": 3}, `needs the string argument "message"`},
	} {
		res := call(t, plain, tc.tool, tc.args)
		if got := strings.Join(texts(res.Content), ""); !res.IsError || !strings.Contains(got, tc.want) {
			t.Errorf("%s(%v): got %q (isError %v), want a tool error saying %q", tc.tool, tc.args, got, res.IsError, tc.want)
		}
	}
}

func TestAskingToolsAnswerAToolErrorAtAVersionWhereTheServerMayNotAsk(t *testing.T) {
	// At 2026-07-28 a server may not send the client a request while it
	// serves one (SEP-2322): the fixtures do not speak that version, and
	// say so as a tool error rather than hang or fail the protocol.
	cs := connectAt(t, "2026-07-28", &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			t.Error("the client was asked to sample")
			return nil, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the client was asked to elicit")
			return nil, nil
		},
	})
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"test_sampling", map[string]any{"prompt": "p"}},
		{"test_elicitation", map[string]any{"message": "m"}},
		{"test_elicitation_sep1330_enums", nil},
	} {
		res := call(t, cs, tc.tool, tc.args)
		if got := strings.Join(texts(res.Content), ""); !res.IsError || !strings.Contains(got, "cannot be sent while serving a request") {
			t.Errorf("%s at 2026-07-28: got %q (isError %v), want a tool error saying the request cannot be sent", tc.tool, got, res.IsError)
		}
	}
}

func TestElicitationToolsReportTheUsersAnswer(t *testing.T) {
	var asked []*sdk.ElicitParams
	answer := map[string]*sdk.ElicitResult{
		"Who are you?": {Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}},
		"Please review and update the form fields with defaults": {Action: "accept", Content: map[string]any{"name": "Jane"}},
		"Please select options from the enum fields":             {Action: "decline"},
	}
	cs := connect(t, &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params)
		return answer[r.Params.Message], nil
	}})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"test_elicitation", map[string]any{"message": "Who are you?"}, `User response: action=accept, content={"email":"ada@example.com","username":"ada"}`},
		// The SDK fills the fields the user left out with the schema's defaults (SEP-1034).
		{"test_elicitation_sep1034_defaults", nil, `Elicitation completed: action=accept, content={"age":30,"name":"Jane","score":95.5,"status":"active","verified":true}`},
		{"test_elicitation_sep1330_enums", nil, `Elicitation completed: action=decline, content=null`},
	} {
		res := call(t, cs, tc.tool, tc.args)
		if got := strings.Join(texts(res.Content), ""); res.IsError || got != tc.want {
			t.Errorf("%s: got %q (isError %v), want %q", tc.tool, got, res.IsError, tc.want)
		}
	}
	if len(asked) != 3 {
		t.Fatalf("the client was asked %d times, want 3", len(asked))
	}
	var schema struct {
		Required []string `json:"required"`
	}
	b, _ := json.Marshal(asked[0].RequestedSchema)
	if err := json.Unmarshal(b, &schema); err != nil || !slices.Equal(schema.Required, []string{"username", "email"}) {
		t.Errorf("test_elicitation's form requires %v (%v), want username and email", schema.Required, err)
	}
}

func TestResourcesReadTheContentTheScenariosDescribe(t *testing.T) {
	cs := connect(t, nil)
	for _, tc := range []struct {
		uri, mime, text string
		blob            []byte
	}{
		{"test://static-text", "text/plain", staticText, nil},
		{"test://static-binary", "image/png", "", redPixelPNG()},
		{"test://watched-resource", "text/plain", watchedText, nil},
		{"test://template/123/data", "application/json", `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`, nil},
		{"test://template/abc/data", "application/json", `{"id":"abc","templateTest":true,"data":"Data for ID: abc"}`, nil},
	} {
		res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: tc.uri})
		if err != nil {
			t.Errorf("reading %s: %v", tc.uri, err)
			continue
		}
		if len(res.Contents) != 1 {
			t.Errorf("%s: %d contents, want 1", tc.uri, len(res.Contents))
			continue
		}
		c := res.Contents[0]
		if c.URI != tc.uri || c.MIMEType != tc.mime || c.Text != tc.text || !bytes.Equal(c.Blob, tc.blob) {
			t.Errorf("%s: got uri %q, type %q, text %q, %d blob bytes; want %q, %q, %q, %d", tc.uri, c.URI, c.MIMEType, c.Text, len(c.Blob), tc.uri, tc.mime, tc.text, len(tc.blob))
		}
	}
}

func TestTemplateDataRefusesAURIOutsideItsTemplateSayingWhy(t *testing.T) {
	for _, uri := range []string{"test://template//data", "test://template/1/2/data", "test://other/1/data"} {
		_, err := templateData(context.Background(), &sdk.ReadResourceRequest{Params: &sdk.ReadResourceParams{URI: uri}})
		if err == nil || !strings.Contains(err.Error(), "does not match test://template/{id}/data") {
			t.Errorf("reading %s: got %v, want an error saying it does not match the template", uri, err)
		}
	}
}

func TestPromptsGiveTheirMessagesAndNameMissingArguments(t *testing.T) {
	cs := connect(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args map[string]string
		want []string
	}{
		{"test_simple_prompt", nil, []string{simplePromptText}},
		{"test_prompt_with_arguments", map[string]string{"arg1": "hello", "arg2": "world"}, []string{"Prompt with arguments: arg1='hello', arg2='world'"}},
		{"test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://x"}, []string{"<resource>", promptResourceAsk}},
		{"test_prompt_with_image", nil, []string{"<image>", promptImageAsk}},
	} {
		res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Errorf("getting %s: %v", tc.name, err)
			continue
		}
		var got []sdk.Content
		for _, m := range res.Messages {
			if m.Role != "user" {
				t.Errorf("%s: a message of role %q, want user", tc.name, m.Role)
			}
			got = append(got, m.Content)
		}
		if !slices.Equal(texts(got), tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, texts(got), tc.want)
		}
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "test_prompt_with_embedded_resource", Arguments: map[string]string{"resourceUri": "test://x"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Messages[0].Content.(*sdk.EmbeddedResource).Resource; r.URI != "test://x" || r.MIMEType != "text/plain" || r.Text != promptResourceText {
		t.Errorf("the embedded resource: got %+v, want the URI given, text/plain, %q", r, promptResourceText)
	}

	_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a"}})
	if err == nil || !strings.Contains(err.Error(), "missing: arg2") {
		t.Errorf("the prompt without arg2: got %v, want an error naming arg2", err)
	}
}

func TestCompleteOffersTheValuesStartingWithWhatWasTyped(t *testing.T) {
	cs := connect(t, nil)
	for _, tc := range []struct {
		ref        *sdk.CompleteReference
		arg, typed string
		want       []string
	}{
		{&sdk.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "par", []string{"paris", "park", "party"}},
		{&sdk.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "", []string{"paris", "park", "party", "test", "testing"}},
		{&sdk.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg2", "xyz", []string{}},
		{&sdk.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id", "4", []string{"456"}},
	} {
		res, err := cs.Complete(context.Background(), &sdk.CompleteParams{Ref: tc.ref, Argument: sdk.CompleteParamsArgument{Name: tc.arg, Value: tc.typed}})
		if err != nil {
			t.Errorf("completing %s %q: %v", tc.arg, tc.typed, err)
			continue
		}
		if !slices.Equal(res.Completion.Values, tc.want) || res.Completion.Total != len(tc.want) {
			t.Errorf("completing %s %q: got %v (total %d), want %v", tc.arg, tc.typed, res.Completion.Values, res.Completion.Total, tc.want)
		}
	}
	_, err := cs.Complete(context.Background(), &sdk.CompleteParams{
		Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "test_simple_prompt"}, Argument: sdk.CompleteParamsArgument{Name: "x", Value: ""}})
	if err == nil || !strings.Contains(err.Error(), `no completions for argument "x"`) || !strings.Contains(err.Error(), "test_prompt_with_arguments arg1") {
		t.Errorf("completing an argument that completes nothing: got %v, want an error naming those that complete", err)
	}
}
