package agent

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/gemini"
	"github.com/myelin-run/myelin/provider/providertest"
)

func init() {
	testWires["gemini"] = testWire{
		server: providertest.NewGemini,
		provider: func(url string) (provider.Provider, error) {
			return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		},
		results:     geminiResults,
		model:       "gemini-3-flash-test",
		messages:    "contents",
		system:      "systemInstruction",
		objectInput: true,
	}
}

// geminiResults are the functionResponse parts of the request's last
// content, with their images: inside the response (functionResponse.parts)
// or, for models that do not take them there, the inline data after.
func geminiResults(req map[string]any) []sentResult {
	contents := req["contents"].([]any)
	var out []sentResult
	for _, x := range contents[len(contents)-1].(map[string]any)["parts"].([]any) {
		p := x.(map[string]any)
		if data, ok := p["inlineData"].(map[string]any); ok && len(out) > 0 {
			out[len(out)-1].images = append(out[len(out)-1].images, data["data"].(string))
			continue
		}
		fr, ok := p["functionResponse"].(map[string]any)
		if !ok {
			continue
		}
		id, _ := fr["id"].(string)
		sr := sentResult{callID: id}
		resp := fr["response"].(map[string]any)
		if text, ok := resp["error"].(string); ok {
			sr.text, sr.isError = text, true
		} else {
			sr.text, _ = resp["output"].(string)
		}
		if parts, ok := fr["parts"].([]any); ok {
			for _, ip := range parts {
				sr.images = append(sr.images, ip.(map[string]any)["inlineData"].(map[string]any)["data"].(string))
			}
		}
		out = append(out, sr)
	}
	return out
}

// On Gemini the model's thought and its signed call go back byte for byte
// in the tool loop and in every request after a restart; the fake, like
// the API, would refuse a request of the loop that dropped the signature.
func TestGeminiThoughtsAndSignaturesSurviveAToolLoopAndARestart(t *testing.T) {
	r := newWireRig(t, "gemini")
	r.write("a.txt", "alpha\n")
	r.srv.Push(providertest.Step{GeminiThought: "I should read a.txt.", ToolCalls: []providertest.ToolCall{readCall("call_1", "a.txt")}}, providertest.Step{Text: "first"})
	_, events := r.turn("turn one")
	thought := ""
	for _, e := range events {
		if e.Kind == Thinking {
			thought += e.Text
		}
	}
	if thought != "I should read a.txt." {
		t.Fatalf("thinking events %q", thought)
	}
	r.agent = r.newAgent()
	r.srv.Push(providertest.Step{ToolCalls: []providertest.ToolCall{readCall("call_2", "a.txt")}}, providertest.Step{Text: "second"})
	if tr, _ := r.turn("turn two"); tr.Text != "second" {
		t.Fatalf("turn two %+v", tr)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	// the contents of the loop's request, less its closing bracket, begin
	// every later one
	loop := string(reqs[1])
	end := strings.Index(loop, `],"generationConfig"`)
	prefix := loop[:end]
	for i := 2; i < 4; i++ {
		if !strings.HasPrefix(string(reqs[i]), prefix) {
			t.Fatalf("request %d does not begin with the earlier contents:\n%s\n%s", i, reqs[i], prefix)
		}
	}
	sig := `"thoughtSignature":"` + base64.StdEncoding.EncodeToString([]byte("providertest thought signature 1")) + `"`
	if !strings.Contains(prefix, `{"text":"I should read a.txt.","thought":true},{"functionCall":{"args":{"path":"a.txt"},"id":"call_1","name":"workspace--read"},`+sig+`}`) {
		t.Fatalf("the thought and the signed call were not sent back as they came:\n%s", loop)
	}
}
