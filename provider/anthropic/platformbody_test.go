package anthropic

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tidwall/sjson"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// sdkEdit is what the SDK's bedrock (streamInURL, betasInBody) or vertex
// middleware made of a first-party body: anthropic_version set, the betas
// set, model (and stream) deleted, each by sjson, in that order.
func sdkEdit(t testing.TB, body []byte, version string, betas []string, streamInURL bool) []byte {
	t.Helper()
	var err error
	if body, err = sjson.SetBytes(body, "anthropic_version", version); err != nil {
		t.Fatal(err)
	}
	if len(betas) > 0 {
		if body, err = sjson.SetBytes(body, "anthropic_beta", betas); err != nil {
			t.Fatal(err)
		}
	}
	body, _ = sjson.DeleteBytes(body, "model")
	if streamInURL {
		body, _ = sjson.DeleteBytes(body, "stream")
	}
	return body
}

// onForm is a platform wire whose Send does nothing: for its Body.
func onForm(t testing.TB, streamInURL, betasInBody bool, cfg Config) *OnPlatform {
	t.Helper()
	p, err := NewOn(Platform{
		Name: "test", Version: "test-2023-01-01", BaseURL: "https://platform.example",
		Send:        func(*http.Request, Route) error { return nil },
		StreamInURL: streamInURL, BetasInBody: betasInBody,
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkPlatformBodies fails unless each platform form's body for req is
// the SDK middleware's edit of the first-party body, from a fresh head and
// from the kept one.
func checkPlatformBodies(t testing.TB, req provider.Request, th Thinking) {
	t.Helper()
	for _, stream := range []bool{true, false} {
		first, err := BodyWith(req, stream, th)
		if err != nil {
			return // a request the wire refuses: nothing is sent either way
		}
		for _, form := range []struct{ streamInURL, betasInBody bool }{{true, true}, {false, false}} {
			p := onForm(t, form.streamInURL, form.betasInBody, Config{NoStream: !stream, Thinking: th})
			var betas []string
			if form.betasInBody {
				betas = th.betas()
			}
			want := sdkEdit(t, append([]byte(nil), first...), "test-2023-01-01", betas, form.streamInURL)
			for range 2 { // encoded, then kept
				got, err := p.Body(req)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Fatalf("stream %v, form %+v: the wire wrote\n%s\nthe SDK's middleware sent\n%s", stream, form, got, want)
				}
			}
		}
	}
}

// The body a platform with Send receives is the SDK middleware's edit of
// the first-party body, byte for byte, with and without thinking, betas
// and stream.
func TestThePlatformBodyIsTheSDKsEdit(t *testing.T) {
	noSystem := providertest.SampleRequest()
	noSystem.System, noSystem.Tools = "", nil
	odd := providertest.SampleRequest()
	odd.Model = "model \"quoted\" <&> é \xff"
	for _, th := range []Thinking{{}, {Budget: 1024}, {Budget: 2048, Interleaved: true}, {Adaptive: true, Display: "omitted"}} {
		for _, req := range []provider.Request{providertest.SampleRequest(), noSystem, odd} {
			req.MaxTokens = 4096
			checkPlatformBodies(t, req, th)
		}
	}
}

// A head edited for one request is not handed out for another whose head
// differs, nor for the same head with other betas.
func TestAnEditedHeadIsKeptOnlyForItsOwnHead(t *testing.T) {
	p := onForm(t, true, true, Config{Thinking: Thinking{Budget: 2048, Interleaved: true}})
	plain := onForm(t, true, true, Config{})
	for _, model := range []string{"a", "b", "a"} {
		req := providertest.SampleRequest()
		req.Model = model
		req.MaxTokens = 4096
		for _, q := range []*OnPlatform{p, plain} {
			got, err := q.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			first, err := BodyWith(req, true, q.cfg.Thinking)
			if err != nil {
				t.Fatal(err)
			}
			if want := sdkEdit(t, first, "test-2023-01-01", q.cfg.Thinking.betas(), true); string(got) != string(want) {
				t.Fatalf("model %s: %s\nwant %s", model, got, want)
			}
		}
	}
}

// FuzzThePlatformBodyIsTheSDKsEdit holds the platform body to the SDK
// middleware's edit for any model, system prompt, tool and text.
func FuzzThePlatformBodyIsTheSDKsEdit(f *testing.F) {
	f.Add("claude-test", "You are terse.", "workspace--read", `{"type":"object"}`, "hello", 1024, false)
	f.Add("", "", "", `{}`, "", 1, true)
	f.Add("m\"\\\x00\xff<", "s\u2028", "t", `{"a":[1,2,{"model":"x"}]}`, "\"model\":\"y\"", 70000, true)
	f.Fuzz(func(t *testing.T, model, system, tool, schema, text string, maxTokens int, interleaved bool) {
		if !json.Valid([]byte(schema)) {
			return
		}
		req := providertest.SampleRequest()
		req.Model, req.System, req.MaxTokens = model, system, maxTokens
		req.Tools = []provider.Tool{{Name: tool, Description: text, InputSchema: json.RawMessage(schema)}}
		req.Messages[0].Parts[0].Text = text
		th := Thinking{}
		if interleaved {
			th = Thinking{Budget: 1024, Interleaved: true}
		}
		checkPlatformBodies(t, req, th)
	})
}
