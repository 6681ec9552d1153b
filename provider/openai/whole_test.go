package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/result"
)

// sdkWhole is Complete's whole answer (NoStream) as it was when the SDK
// posted and decoded it: the reference decodeCompletion and
// accumulator.whole are held to.
func sdkWhole(client sdk.Client, body []byte, onText func(string)) (provider.Response, error) {
	var c sdk.ChatCompletion
	if err := client.Post(context.Background(), "chat/completions", nil, &c, option.WithRequestBody("application/json", body)); err != nil {
		return provider.Response{}, sdkDescribe(err)
	}
	return sdkRead(&c, onText)
}

// sdkRead is what Complete read of the SDK's decoded answer c.
func sdkRead(c *sdk.ChatCompletion, onText func(string)) (provider.Response, error) {
	a := accumulator{}
	if len(c.Choices) == 0 {
		return provider.Response{}, errors.New("openai: the answer has no choices")
	}
	ch := c.Choices[0]
	var cont content
	if raw := ch.Message.JSON.Content.Raw(); strings.HasPrefix(raw, "[") {
		if err := cont.UnmarshalJSON([]byte(raw)); err != nil {
			return provider.Response{}, fmt.Errorf("openai: the answer's content: %w", err)
		}
		ch.Message.Content = string(cont.Text)
	}
	a.text.WriteString(ch.Message.Content)
	if cont.Thinking != "" {
		a.think(string(cont.Thinking))
	}
	a.skip(cont.Skipped)
	for _, tc := range ch.Message.ToolCalls {
		a.calls = append(a.calls, &call{id: tc.ID, name: tc.Function.Name})
		a.calls[len(a.calls)-1].args.WriteString(tc.Function.Arguments)
	}
	a.stop = ch.FinishReason
	u := c.Usage
	a.setUsage(int(u.PromptTokens), int(u.CompletionTokens), int(u.PromptTokensDetails.CachedTokens))
	if onText != nil && ch.Message.Content != "" {
		onText(result.WellFormed(ch.Message.Content))
	}
	if err := a.errOnlySkipped(); err != nil {
		return provider.Response{}, err
	}
	return a.response(), nil
}

// localIDs puts "local" for the ids the wire made for calls the server
// sent without one (localID is random).
func localIDs(r provider.Response) provider.Response {
	for i, p := range r.Message.Parts {
		if strings.HasPrefix(p.CallID, localPrefix) {
			r.Message.Parts[i].CallID = "local"
		}
	}
	return r
}

// TestAWholeAnswerIsDecodedAsTheSDKDecodedIt serves each answer in
// testdata/completions (in the shapes OpenAI, Mistral, Ollama, vLLM, the
// llama.cpp server, Gemini and OpenRouter answer, and some broken ones)
// to the wire with NoStream and to the SDK's path it replaced, and
// requires the same response, text shown and error.
func TestAWholeAnswerIsDecodedAsTheSDKDecodedIt(t *testing.T) {
	files, err := filepath.Glob("testdata/completions/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("%d answers in testdata/completions (%v)", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			answer, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(answer)
			}))
			defer srv.Close()
			var wantText, gotText strings.Builder
			req := sampleRequest()
			body, err := Body(req, false, false)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := sdkWhole(sdkClient(provider.Endpoint{APIKey: "k", BaseURL: srv.URL}, nil), body, func(s string) { wantText.WriteString(s) })
			p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := p.Complete(context.Background(), req, func(s string) { gotText.WriteString(s) })
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("err %v\nthe SDK's %v", gotErr, wantErr)
			}
			if g, w := localIDs(got), localIDs(want); !reflect.DeepEqual(g, w) {
				t.Fatalf("response %+v (%+v)\nthe SDK's %+v (%+v)", g, *g.Message.Usage, w, *w.Message.Usage)
			}
			if gotText.String() != wantText.String() {
				t.Fatalf("shown %q, the SDK's %q", gotText.String(), wantText.String())
			}
		})
	}
}

// A whole answer is read as JSON whatever its Content-Type says: the SDK
// refused one that did not say JSON ("expected destination type of
// 'string' or '[]byte' ..."), the one place the two differ.
func TestAWholeAnswerIsReadWhateverItsContentType(t *testing.T) {
	answer, err := os.ReadFile("testdata/completions/openai-text.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range []string{"text/plain; charset=utf-8", "", "application/octet-stream"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{ct}
			_, _ = w.Write(answer)
		}))
		p, err := New(Config{APIKey: "k", BaseURL: srv.URL, NoStream: true, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Complete(context.Background(), sampleRequest(), nil)
		srv.Close()
		if err != nil || resp.StopReason != "stop" || !strings.Contains(resp.Message.Text(), "two lines") {
			t.Fatalf("Content-Type %q: %+v, %v", ct, resp, err)
		}
	}
}

// FuzzAWholeAnswerIsReadAsTheSDKReadIt holds what the wire reads of a
// whole answer (decodeCompletion, accumulator.whole) to what it read of
// the SDK's decoding (encoding/json's Decoder into its ChatCompletion,
// then sdkRead): the same response, or the same error. Any bytes: an
// answer of a member of the wrong type, a key given twice or a read
// field's name in other letters is read as the SDK read it. Only an
// answer with a lone escaped surrogate before another escape is passed
// over (TestALoneSurrogateKeepsTheEscapeAfterIt names the difference).
func FuzzAWholeAnswerIsReadAsTheSDKReadIt(f *testing.F) {
	files, _ := filepath.Glob("testdata/completions/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		var unchecked completion
		_ = unchecked.UnmarshalJSON(answer) // JSON or not: no panic, no end
		if loneSurrogate.Match(answer) {
			return
		}
		var want provider.Response
		var theirs sdk.ChatCompletion
		wantErr := json.NewDecoder(bytes.NewReader(answer)).Decode(&theirs)
		if wantErr != nil {
			wantErr = fmt.Errorf("error parsing response json: %w", wantErr)
		} else {
			want, wantErr = sdkRead(&theirs, nil)
		}
		a := accumulator{}
		c, gotErr := decodeCompletion(answer)
		if gotErr == nil {
			gotErr = a.whole(&c)
		}
		if gotErr == nil {
			gotErr = a.errOnlySkipped()
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: err %v, the SDK's %v", answer, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if g, w := localIDs(a.response()), localIDs(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%q:\n %+v (%+v)\nthe SDK's\n %+v (%+v)", answer, g, *g.Message.Usage, w, *w.Message.Usage)
		}
	})
}

// BenchmarkWholeAnswer reads a whole answer with ten tool calls (and one
// of 64 KiB of text) as the wire does (decodeCompletion,
// accumulator.whole) and as it did through the SDK (encoding/json's
// Decoder into its ChatCompletion, sdkRead), side by side. Run:
//
//	go test ./provider/openai -run '^$' -bench WholeAnswer -benchmem -count 3
func BenchmarkWholeAnswer(b *testing.B) {
	var calls strings.Builder
	for i := range 10 {
		if i > 0 {
			calls.WriteByte(',')
		}
		fmt.Fprintf(&calls, `{"id":"call_%d","type":"function","function":{"name":"workspace--read","arguments":"{\"path\":\"src/file%d.go\"}"}}`, i, i)
	}
	answers := map[string][]byte{
		"tools": []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1764922700,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + calls.String() + `],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1200,"completion_tokens":210,"total_tokens":1410,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default","system_fingerprint":"fp_b"}`),
		"text":  []byte(`{"id":"chatcmpl-t","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat(`line of text \"quoted\"\n`, 64<<10/24) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":20}}`),
	}
	for _, name := range []string{"tools", "text"} {
		answer := answers[name]
		b.Run(name+"/wire", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(answer)))
			for b.Loop() {
				c, err := decodeCompletion(answer)
				a := accumulator{}
				if err != nil || a.whole(&c) != nil {
					b.Fatal(err)
				}
				_ = a.response()
			}
		})
		b.Run(name+"/SDK", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(answer)))
			for b.Loop() {
				var c sdk.ChatCompletion
				if err := json.NewDecoder(bytes.NewReader(answer)).Decode(&c); err != nil {
					b.Fatal(err)
				}
				if _, err := sdkRead(&c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
