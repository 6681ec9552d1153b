package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/myelin-run/myelin/history"
	"github.com/myelin-run/myelin/internal/jsonstring"
	"github.com/myelin-run/myelin/provider"
)

// canned is a transport that answers every request, in process, with one
// recorded answer, and keeps the requests it got and their bodies.
type canned struct {
	status int
	ctype  string
	body   []byte

	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
}

func (c *canned) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	c.mu.Lock()
	c.reqs, c.bodies = append(c.reqs, r), append(c.bodies, body)
	c.mu.Unlock()
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{"Content-Type": {c.ctype}}, Body: io.NopCloser(bytes.NewReader(c.body)), Request: r,
		ContentLength: int64(len(c.body))}, nil
}

// sdkWire is the wire as it read answers before: genai's own calls, each
// chunk genai decoded read by the same accumulator (fromSDK) — the
// reference the direct reader is held to.
type sdkWire struct {
	client   *genai.Client
	noStream bool
	thoughts bool
}

func newSDKWire(t testing.TB, hc *http.Client, cfg Config) *sdkWire {
	t.Helper()
	base := cfg.BaseURL
	if base != "" && !strings.HasSuffix(base, "/") {
		base += "/"
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: cfg.APIKey, Backend: genai.BackendGeminiAPI, HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: cfg.apiVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	return &sdkWire{client: client, noStream: cfg.NoStream, thoughts: cfg.Thoughts}
}

// complete is the wire's Complete as it was on genai's calls, with body
// as the request's body (the SDK's own left empty, as bodyTransport had).
func (w *sdkWire) complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	off := false
	config := &genai.GenerateContentConfig{AutomaticContinuation: &off,
		HTTPOptions: &genai.HTTPOptions{ExtrasRequestProvider: func(map[string]any) map[string]any { return nil }}}
	a := accumulator{onText: onText, onThinking: req.OnThinking}
	if w.noStream {
		resp, err := w.client.Models.GenerateContent(ctx, req.Model, nil, config)
		if err != nil {
			return provider.Response{}, describe(fromSDKError(err))
		}
		if err := a.add(fromSDK(resp)); err != nil {
			return provider.Response{}, err
		}
		if a.stop == "" {
			a.stop = "stop"
		}
		return a.response(), nil
	}
	for resp, err := range w.client.Models.GenerateContentStream(ctx, req.Model, nil, config) {
		if err != nil {
			return provider.Response{}, describe(fromSDKError(err))
		}
		if err := a.add(fromSDK(resp)); err != nil {
			return provider.Response{}, err
		}
	}
	if a.stop == "" {
		return provider.Response{}, fmt.Errorf("gemini: %w (no finishReason)", provider.ErrStreamCut)
	}
	return a.response(), nil
}

// fromSDKError is genai's error as the wire's: a genai.APIError becomes
// the APIError of the same members (so that the two readings of an error
// answer, compared, differ only if their members do); any other error is
// itself.
func fromSDKError(err error) error {
	var e genai.APIError
	if errors.As(err, &e) {
		return APIError{Code: e.Code, Message: e.Message, Status: e.Status, Details: e.Details}
	}
	return err
}

// fromSDK is what the wire read of genai's decoding of a chunk: the
// signature's bytes in base64, the arguments map as JSON.
func fromSDK(r *genai.GenerateContentResponse) *chunk {
	c := &chunk{}
	if u := r.UsageMetadata; u != nil {
		c.UsageMetadata = &usage{PromptTokenCount: int(u.PromptTokenCount), CachedContentTokenCount: int(u.CachedContentTokenCount),
			CandidatesTokenCount: int(u.CandidatesTokenCount), ThoughtsTokenCount: int(u.ThoughtsTokenCount)}
	}
	if f := r.PromptFeedback; f != nil {
		c.PromptFeedback = &promptFeedback{BlockReason: string(f.BlockReason), BlockReasonMessage: f.BlockReasonMessage}
	}
	for _, cand := range r.Candidates {
		k := candidate{FinishReason: string(cand.FinishReason)}
		if cand.Content != nil {
			k.Content = &content{}
			for _, p := range cand.Content.Parts {
				var q part
				if p != nil {
					q = part{Text: jsonstring.Text(p.Text), Thought: p.Thought}
					if len(p.ThoughtSignature) > 0 {
						q.ThoughtSignature = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
					}
					if fc := p.FunctionCall; fc != nil {
						q.FunctionCall = &functionCall{ID: fc.ID, Name: fc.Name}
						if fc.Args != nil {
							q.FunctionCall.Args, _ = json.Marshal(fc.Args)
						}
					}
				}
				k.Content.Parts = append(k.Content.Parts, q)
			}
		}
		c.Candidates = append(c.Candidates, k)
	}
	return c
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A recorded answer read by the direct reader and by genai's decoding
// through the same accumulator gives the same message, the same text and
// thoughts as they streamed, and the same error; checked besides against
// what each answer says.
func TestTheDirectReaderReadsWhatTheSDKReads(t *testing.T) {
	const sse, js = "text/event-stream", "application/json"
	for _, tc := range []struct {
		name     string
		status   int
		ctype    string
		fixture  string // a file of testdata, else body
		body     string
		noStream bool
		check    func(t *testing.T, resp provider.Response, shown string, err error)
		// sameError is false where the two say the same thing in other
		// words (a chunk cut in two: genai names its JSON error)
		otherWords bool
	}{
		{name: "a streamed answer with thoughts, text, ten calls and usage", ctype: sse, fixture: "answer.sse", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if got, want := fmt.Sprintf("error %v, %d parts, stop %q, shown %q", err, len(resp.Message.Parts), resp.StopReason, shown),
				`error <nil>, 12 parts, stop "stop", shown "Reading them <all> & more, ünïcode."`; got != want {
				t.Fatalf("%s\nwant %s", got, want)
			}
			if c := resp.Message.Parts[2]; c.CallID != "call_0" || c.Signature != "c2lnbmF0dXJlIG9uZQ==" ||
				string(c.Input) != `{"deep":{"a":null,"b":[1,2.5,"<x>"]},"n":0,"path":"dir/f0.txt"}` {
				t.Fatalf("first call %+v (%s)", c, c.Input)
			}
			if u := *resp.Message.Usage; u != (history.Usage{Input: 1200, CacheRead: 800, Output: 125}) {
				t.Fatalf("usage %+v", u)
			}
		}},
		{name: "the same answer whole", ctype: js, fixture: "answer.json", noStream: true, check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if got, want := fmt.Sprintf("error %v, %d parts, stop %q", err, len(resp.Message.Parts), resp.StopReason), `error <nil>, 12 parts, stop "stop"`; got != want {
				t.Fatalf("%s\nwant %s", got, want)
			}
		}},
		{name: "text, a null part, an unspecified reason and a last chunk's signature", ctype: sse, fixture: "text.sse", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			var parts []string
			for _, p := range resp.Message.Parts {
				parts = append(parts, fmt.Sprintf("%q signed %q", p.Text, p.Signature))
			}
			if got, want := fmt.Sprintf("error %v, stop %q, parts %s", err, resp.StopReason, parts),
				`error <nil>, stop "max_tokens", parts ["Done, all of it." signed "c2lnbmF0dXJlIHR3bw=="]`; got != want {
				t.Fatalf("%s\nwant %s", got, want)
			}
		}},
		{name: "a blocked prompt", ctype: sse, fixture: "blocked.sse", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if err == nil || err.Error() != "gemini: the prompt was blocked (PROHIBITED_CONTENT): The prompt was blocked." {
				t.Fatalf("%v", err)
			}
		}},
		{name: "an error object mid-stream", ctype: sse, fixture: "midstream-error.sse", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			var apiErr APIError
			if err == nil || err.Error() != "gemini: 503 Service Unavailable: The model is overloaded. (UNAVAILABLE)" {
				t.Fatalf("error %v, want gemini's words for the 503", err)
			}
			if !errors.As(err, &apiErr) || apiErr.Code != 503 {
				t.Fatalf("error %v (%T): no APIError of code 503 beneath it (code %d)", err, err, apiErr.Code)
			}
			if shown != "Reading them <all>" {
				t.Fatalf("shown %q", shown)
			}
		}},
		{name: "a stream that ends with no finishReason", ctype: sse, fixture: "truncated.sse", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if err == nil || !strings.Contains(err.Error(), "no finishReason") || shown != "Reading them <all> & more, ünïcode." {
				t.Fatalf("%v, shown %q", err, shown)
			}
		}},
		{name: "a stream cut inside a chunk", ctype: sse, fixture: "cut.sse", otherWords: true, check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if err == nil || shown != "Reading them <all> & more, ünïcode." {
				t.Fatalf("%v, shown %q", err, shown)
			}
		}},
		{name: "an error object as the answer to a stream, with 200", ctype: js, fixture: "error-200.json", check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if err == nil || err.Error() != "gemini: 429 Too Many Requests: Resource has been exhausted (e.g. check quota). (RESOURCE_EXHAUSTED)" {
				t.Fatalf("%v", err)
			}
		}},
		{name: "a 400 keeps the provider's message", status: 400, ctype: js,
			body: `{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`,
			check: func(t *testing.T, resp provider.Response, shown string, err error) {
				var apiErr APIError
				if err == nil || err.Error() != "gemini: 400 Bad Request: Request contains an invalid argument. (INVALID_ARGUMENT)" {
					t.Fatalf("error %v, want gemini's words for the 400", err)
				}
				if !errors.As(err, &apiErr) {
					t.Fatalf("error %v (%T): no APIError beneath it", err, err)
				}
				if _, ok := provider.IsTooLong(err); ok {
					t.Fatal("read as too long")
				}
			}},
		{name: "a 400 too long", status: 400, ctype: js,
			body: `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
			check: func(t *testing.T, resp provider.Response, shown string, err error) {
				if tl, ok := provider.IsTooLong(err); !ok || tl.Tokens != 1200293 || tl.Limit != 1048576 {
					t.Fatalf("%v", err)
				}
			}},
		{name: "a 502 in plain text", status: 502, ctype: "text/plain", body: "upstream connect error",
			check: func(t *testing.T, resp provider.Response, shown string, err error) {
				if err == nil || err.Error() != "gemini: 502 Bad Gateway: upstream connect error (502 Bad Gateway)" {
					t.Fatalf("%v", err)
				}
			}},
		{name: "a 429 with its details", status: 429, ctype: js,
			body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"},{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinute"}]}]}}`,
			check: func(t *testing.T, resp provider.Response, shown string, err error) {
				var apiErr APIError
				if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" || len(apiErr.Details) != 2 || apiErr.Details[0]["retryDelay"] != "17s" {
					t.Fatalf("error %v: want an APIError of code 429, RESOURCE_EXHAUSTED, with its two details (%#v)", err, apiErr)
				}
			}},
		{name: "a 500 with no body", status: 500, ctype: js, check: func(t *testing.T, resp provider.Response, shown string, err error) {
			if err == nil || err.Error() != "gemini: 500 Internal Server Error:  (500 Internal Server Error)" {
				t.Fatalf("%v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			if tc.fixture != "" {
				body = readFixture(t, tc.fixture)
			}
			cfg := Config{APIKey: "k", BaseURL: "http://gemini.invalid", MaxRetries: -1, NoStream: tc.noStream, Thoughts: true}
			req := provider.Request{Model: "gemini-3-flash-preview", MaxTokens: 100, Messages: userTurn("go")}
			var got [2]struct {
				resp            provider.Response
				shown, thoughts string
				err             error
			}
			for i := range got {
				hc := &http.Client{Transport: &canned{status: tc.status, ctype: tc.ctype, body: body}}
				g := &got[i]
				var shown, thoughts strings.Builder
				req.OnThinking = func(s string) { thoughts.WriteString(s) }
				onText := func(s string) { shown.WriteString(s) }
				if i == 0 {
					c := cfg
					c.HTTPClient = hc
					p, err := New(c)
					if err != nil {
						t.Fatal(err)
					}
					g.resp, g.err = p.Complete(context.Background(), req, onText)
				} else {
					g.resp, g.err = newSDKWire(t, hc, cfg).complete(context.Background(), req, onText)
				}
				g.shown, g.thoughts = shown.String(), thoughts.String()
			}
			direct, sdk := got[0], got[1]
			tc.check(t, direct.resp, direct.shown, direct.err)
			if (direct.err == nil) != (sdk.err == nil) || (!tc.otherWords && direct.err != nil && direct.err.Error() != sdk.err.Error()) {
				t.Fatalf("errors differ:\ndirect %v\ngenai  %v", direct.err, sdk.err)
			}
			var directAPI, sdkAPI APIError
			if errors.As(direct.err, &directAPI) != errors.As(sdk.err, &sdkAPI) || !reflect.DeepEqual(directAPI, sdkAPI) {
				t.Fatalf("the API's errors beneath differ:\ndirect %#v\ngenai  %#v", directAPI, sdkAPI)
			}
			if !reflect.DeepEqual(direct.resp, sdk.resp) || direct.shown != sdk.shown || direct.thoughts != sdk.thoughts {
				t.Fatalf("answers differ:\ndirect %+v %q %q\ngenai  %+v %q %q", direct.resp, direct.shown, direct.thoughts, sdk.resp, sdk.shown, sdk.thoughts)
			}
		})
	}
}

// A call's arguments are stored as genai's map of them encoded: keys
// sorted, compact, <>& as themselves; none, null and {} as {}; anything
// but an object an error.
func TestCallArgumentsAreStoredAsTheSDKsMapOfThemEncodes(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{`{}`, `{}`},
		{` { } `, `{}`},
		{`{"b":1,"a":"\u003cx\u003e & y"}`, `{"a":"<x> & y","b":1}`},
		{`{"n":1.0,"big":12345678901234567890,"e":1e3}`, `{"big":12345678901234567000,"e":1000,"n":1}`},
		{`{"deep":{"z":[true,null],"a":{}}}`, `{"deep":{"a":{},"z":[true,null]}}`},
		{`[1,2]`, ``},
		{`"text"`, ``},
		{`{"a":`, ``},
	} {
		got, err := callArgs(json.RawMessage(tc.raw))
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: no error, %s", tc.raw, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.raw, got, err, tc.want)
		}
	}
}
