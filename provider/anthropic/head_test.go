package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// The head as anthropic-sdk-go v2 encoded it, before encodeHead wrote it
// by hand: the reference its bytes are held to.

// sdkHead is encodeHead as it was: json.Marshal of the SDK's
// MessageNewParams.
func sdkHead(req provider.Request, maxTokens int, th Thinking, ttl CacheTTL) ([]byte, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(maxTokens),
		Thinking:  th.param(),
	}
	for i, t := range req.Tools {
		tp := sdk.ToolParam{
			Name:        t.Name,
			Description: param.NewOpt(t.Description),
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(t.InputSchema)),
		}
		if i == len(req.Tools)-1 {
			tp.CacheControl = ttl.param()
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: ttl.param()}}
	}
	head, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	return head, nil
}

// param is th as the SDK's request parameter; the zero union (no key)
// when th is off.
func (th Thinking) param() sdk.ThinkingConfigParamUnion {
	switch {
	case th.Adaptive:
		return sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{Display: sdk.ThinkingConfigAdaptiveDisplay(th.Display)}}
	case th.Budget > 0:
		return sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(th.Budget), Display: sdk.ThinkingConfigEnabledDisplay(th.Display)}}
	}
	return sdk.ThinkingConfigParamUnion{}
}

// param is the SDK's cache_control for a marked tool or system block
// under t.
func (t CacheTTL) param() sdk.CacheControlEphemeralParam {
	p := sdk.NewCacheControlEphemeralParam()
	if t.long() {
		p.TTL = sdk.CacheControlEphemeralTTLTTL1h
	}
	return p
}

// sdkWireModel is wireModel as it was: the model read back from the
// SDK's encoding of it.
func sdkWireModel(model string) string {
	if utf8.ValidString(model) {
		return model
	}
	head, err := json.Marshal(sdk.MessageNewParams{Model: sdk.Model(model)})
	if err != nil {
		return model
	}
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(head, &v) != nil {
		return model
	}
	return v.Model
}

// oddStrings are strings whose every escape the SDK's encoder writes its
// own way, or might: HTML's characters, the JavaScript line breaks, each
// control character with a short escape and some without, DEL, bytes that
// are not UTF-8 (a lone one, a cut character, a surrogate in UTF-8 form),
// quotes and backslashes, characters of every length.
var oddStrings = []string{
	"", "claude-sonnet-4-6", "a<b>&c", "line\u2028para\u2029end", "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"bad \xff byte", "cut \xe2\x80", "\xed\xa0\x80 surrogate", "\xe2\b\xe2\x80\f", `q"uote\ back/slash`, "é 日本 😀", "\ufffd",
}

// oddSchemas are input schemas of every kind the SDK takes or refuses:
// none, empty, white space, JSON of each kind with and without white
// space, with escapes and raw bytes the compaction escapes or keeps, and
// not JSON in a few ways.
var oddSchemas = []json.RawMessage{
	nil, {}, json.RawMessage(" \n\t"), json.RawMessage("null"), json.RawMessage("{}"),
	json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	json.RawMessage("{ \"type\" :\n\t\"object\" , \"properties\" : { } }\r\n"),
	json.RawMessage(`{"description":"a <path> & more"}`),
	json.RawMessage("{\"d\":\"\u2028 \u2029 \xe2\x80\xa8\xe2\x80\"}"),
	json.RawMessage("{\"d\":\"\xff\xed\xa0\x80 raw\"}"),
	json.RawMessage(`{"d":"\ud800 \u0000 \/ \u003c"}`),
	json.RawMessage(`[1, 2.5e+10, -0, true, false, null]`), json.RawMessage(`"a string"`), json.RawMessage(`42`),
	json.RawMessage(`{"a":1}x`), json.RawMessage(`{"a":1`), json.RawMessage(`{"a":1,}`), json.RawMessage(`{'a':1}`),
	json.RawMessage("\xef\xbb\xbf{}"), json.RawMessage(`{"a":"\x"}`), json.RawMessage("{\"a\":\"\x01\"}"),
	json.RawMessage(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)),
}

// thinkings are every kind of Thinking and display, and what Check
// refuses but encodeHead may still be given.
var thinkings = []Thinking{
	{}, {Budget: 1024}, {Budget: math.MaxInt}, {Budget: 2048, Interleaved: true},
	{Budget: 1024, Display: "summarized"}, {Budget: 1024, Display: "omitted"},
	{Adaptive: true}, {Adaptive: true, Display: "summarized"}, {Adaptive: true, Display: "omitted"},
	{Adaptive: true, Budget: 4096}, {Budget: -5}, {Budget: -5, Display: "summarized"},
	{Display: "omitted"}, {Adaptive: true, Display: "a<b>\b\xff"},
}

// Every head, encoded by hand, is the SDK's, byte for byte, or fails as
// the SDK did, with its words: tools or none, each odd schema, odd names,
// descriptions, system prompts and models, each max_tokens edge, under
// every Thinking and both lifetimes.
func TestTheHeadIsTheSDKs(t *testing.T) {
	sample := providertest.SampleRequest()
	tool := func(name, desc string, schema json.RawMessage) provider.Tool {
		return provider.Tool{Name: name, Description: desc, InputSchema: schema}
	}
	type head struct {
		name      string
		req       provider.Request
		maxTokens int
	}
	heads := []head{
		{"the sample", sample, 1024},
		{"no tools, no system", provider.Request{Model: "m"}, 1},
		{"nothing at all", provider.Request{}, 0},
		{"one tool", provider.Request{Model: "m", Tools: sample.Tools[:1]}, 8},
		{"three tools, the last marked", provider.Request{Model: "m", System: "s", Tools: append(sample.Tools[:2:2], tool("third", "", json.RawMessage(`{}`)))}, 8},
		{"an empty description and name", provider.Request{Model: "m", Tools: []provider.Tool{tool("", "", json.RawMessage(`{}`)), tool("b", "", nil)}}, 8},
		{"max_tokens -1", sample, -1},
		{"max_tokens MaxInt", sample, math.MaxInt},
		{"max_tokens MinInt", sample, math.MinInt},
	}
	for i, s := range oddStrings {
		heads = append(heads,
			head{fmt.Sprintf("model %d %q", i, s), provider.Request{Model: s, System: "s", Tools: sample.Tools}, 100},
			head{fmt.Sprintf("system %d %q", i, s), provider.Request{Model: "m", System: s}, 100},
			head{fmt.Sprintf("tool name %d %q", i, s), provider.Request{Model: "m", Tools: []provider.Tool{tool(s, "d", json.RawMessage(`{}`))}}, 100},
			head{fmt.Sprintf("description %d %q", i, s), provider.Request{Model: "m", Tools: []provider.Tool{tool("n", s, json.RawMessage(`{}`)), tool("n2", s, nil)}}, 100},
		)
	}
	for i, schema := range oddSchemas {
		heads = append(heads,
			head{fmt.Sprintf("schema %d %.40q, last", i, schema), provider.Request{Model: "m", System: "s", Tools: []provider.Tool{tool("a", "A.", json.RawMessage(`{}`)), tool("b", "B.", schema)}}, 100},
			head{fmt.Sprintf("schema %d %.40q, first", i, schema), provider.Request{Model: "m", Tools: []provider.Tool{tool("a", "A.", schema), tool("b", "B.", json.RawMessage(`{ "type" : 1 }`))}}, 100},
		)
	}
	n := 0
	for _, h := range heads {
		for _, th := range thinkings {
			for _, ttl := range []CacheTTL{"", CacheTTL5m, CacheTTL1h} {
				got, gotErr := encodeHead(h.req, h.maxTokens, th, ttl)
				want, wantErr := sdkHead(h.req, h.maxTokens, th, ttl)
				if !sameHead(got, gotErr, want, wantErr) {
					t.Errorf("%s, %+v, ttl %q:\n got %q, %v\nwant %q, %v", h.name, th, ttl, got, gotErr, want, wantErr)
				}
				if gotErr == nil {
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no head was encoded")
	}
}

// sameHead reports whether two encodings are the same: the same bytes, or
// errors of the same words.
func sameHead(got []byte, gotErr error, want []byte, wantErr error) bool {
	if gotErr != nil || wantErr != nil {
		return gotErr != nil && wantErr != nil && gotErr.Error() == wantErr.Error() && got == nil
	}
	return bytes.Equal(got, want)
}

// A schema that is not JSON fails with the syntax error inside, which the
// caller can reach (the SDK's words around it).
func TestAHeadWhoseSchemaIsNotJSONWrapsTheSyntaxError(t *testing.T) {
	req := provider.Request{Model: "m", Tools: []provider.Tool{{Name: "a", InputSchema: json.RawMessage(`{"a":`)}}}
	_, err := encodeHead(req, 1, Thinking{}, "")
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) || !strings.HasPrefix(err.Error(), "anthropic: encoding the request: json: error calling MarshalJSON") {
		t.Fatalf("encodeHead: %v, want the SDK's words around a *json.SyntaxError", err)
	}
}

func FuzzTheHeadIsTheSDKs(f *testing.F) {
	for i, s := range oddStrings {
		schema := oddSchemas[i%len(oddSchemas)]
		f.Add(s, "desc", "sys", "m", []byte(schema), schema == nil, "", 1024, 2048, uint8(i))
		f.Add("name", s, s, s, []byte(`{"type":"object"}`), false, "summarized", 0, i-1, uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, name, desc, system, model string, schema []byte, nilSchema bool, display string, budget, maxTokens int, flags uint8) {
		if nilSchema {
			schema = nil
		} else if schema == nil {
			schema = []byte{}
		}
		req := provider.Request{Model: model, System: system}
		switch flags % 4 {
		case 1:
			req.Tools = []provider.Tool{{Name: name, Description: desc, InputSchema: schema}}
		case 2:
			req.Tools = []provider.Tool{{Name: name, Description: desc, InputSchema: schema}, {Name: desc, Description: name, InputSchema: json.RawMessage(`{}`)}}
		case 3:
			req.Tools = []provider.Tool{{Name: desc, Description: name, InputSchema: json.RawMessage(`{}`)}, {Name: name, Description: desc, InputSchema: schema}}
		}
		th := Thinking{Budget: budget, Adaptive: flags&4 != 0, Display: display}
		ttl := CacheTTL("")
		if flags&8 != 0 {
			ttl = CacheTTL1h
		}
		got, gotErr := encodeHead(req, maxTokens, th, ttl)
		want, wantErr := sdkHead(req, maxTokens, th, ttl)
		if !sameHead(got, gotErr, want, wantErr) {
			t.Fatalf("%+v, %+v, ttl %q:\n got %q, %v\nwant %q, %v", req, th, ttl, got, gotErr, want, wantErr)
		}
		if got, want := wireModel(model), sdkWireModel(model); got != want {
			t.Fatalf("wireModel(%q) = %q, the SDK's %q", model, got, want)
		}
	})
}

// BenchmarkEncodeHead encodes the sample request's head (two tools, a
// system prompt) as the SDK did and by hand.
func BenchmarkEncodeHead(b *testing.B) {
	req := providertest.SampleRequest()
	for _, c := range []struct {
		name   string
		encode func(provider.Request, int, Thinking, CacheTTL) ([]byte, error)
	}{{"sdk", sdkHead}, {"hand", encodeHead}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(req, 1024, Thinking{Adaptive: true}, CacheTTL1h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestAProviderSendsTheHeadOfEachRequestAsBuiltAfreshWhateverChanged(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	base := providertest.SampleRequest()
	base.Tools = append([]provider.Tool{{Name: "mine", Description: "Mine.", InputSchema: json.RawMessage(schema)}}, base.Tools...)
	with := func(edit func(*provider.Request)) func() provider.Request {
		return func() provider.Request {
			r := base
			r.Tools = append([]provider.Tool(nil), base.Tools...)
			edit(&r)
			return r
		}
	}
	budget := Thinking{Budget: 1024}
	steps := []struct {
		name string
		req  func() provider.Request
		th   Thinking
	}{
		{"first", with(func(*provider.Request) {}), Thinking{}},
		{"the same again", with(func(*provider.Request) {}), Thinking{}},
		// the caller reuses the schema's bytes: the cache's copy must not follow
		{"schema edited in place", with(func(*provider.Request) { copy(schema[len(`{"type":"`):], "thing ") }), Thinking{}},
		{"system changed", with(func(r *provider.Request) { r.System = "You are verbose." }), Thinking{}},
		{"no system", with(func(r *provider.Request) { r.System = "" }), Thinking{}},
		{"description changed", with(func(r *provider.Request) { r.Tools[1].Description = "Read a file <fast>." }), Thinking{}},
		{"tool renamed", with(func(r *provider.Request) { r.Tools[2].Name = "workspace--put" }), Thinking{}},
		{"a tool fewer", with(func(r *provider.Request) { r.Tools = r.Tools[:2] }), Thinking{}},
		{"no tools", with(func(r *provider.Request) { r.Tools = nil }), Thinking{}},
		{"no schema", with(func(r *provider.Request) { r.Tools[0].InputSchema = nil }), Thinking{}},
		{"a schema with spaces", with(func(r *provider.Request) { r.Tools[0].InputSchema = json.RawMessage(`{ "type": "object" }`) }), Thinking{}},
		{"model changed", with(func(r *provider.Request) { r.Model = "claude-other" }), Thinking{}},
		{"max_tokens changed", with(func(r *provider.Request) { r.MaxTokens = 4096 }), Thinking{}},
		{"thinking on", with(func(r *provider.Request) { r.MaxTokens = 4096 }), budget},
		{"thinking adaptive", with(func(r *provider.Request) { r.MaxTokens = 4096 }), Thinking{Adaptive: true, Display: "summarized"}},
		{"back to the first", with(func(*provider.Request) {}), Thinking{}},
	}
	srv := providertest.NewAnthropic(t)
	p := newProvider(t, srv, false)
	for i, s := range steps {
		srv.Push(providertest.Step{Text: "ok"})
		q := p
		if s.th.On() {
			var err error
			if q, err = p.WithThinking(s.th); err != nil {
				t.Fatal(err)
			}
		}
		req := s.req()
		if _, err := q.Complete(context.Background(), req, nil); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want, err := BodyWith(req, true, s.th)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[i]; string(got) != string(want) {
			t.Errorf("%s: sent\n%s\nwant\n%s", s.name, got, want)
		}
	}
}

func TestRequestsWithDifferentHeadsAtOnceEachSendTheirOwn(t *testing.T) {
	reqs := []provider.Request{providertest.SampleRequest(), providertest.SampleRequest()}
	reqs[1].System = "You are verbose."
	reqs[1].Tools = reqs[1].Tools[:1]
	srv := providertest.NewAnthropic(t)
	for range 40 {
		srv.Push(providertest.Step{Text: "ok"})
	}
	p := newProvider(t, srv, false)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := p.Complete(context.Background(), reqs[(g+i)%2], nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := map[string]int{}
	for _, b := range srv.Requests() {
		got[string(b)]++
	}
	if len(got) != 2 || got[string(mustJSONBody(t, reqs[0]))] != 20 || got[string(mustJSONBody(t, reqs[1]))] != 20 {
		t.Fatalf("sent %d distinct bodies, %v; want each of 2 twenty times", len(got), counts(got))
	}
}

func mustJSONBody(t *testing.T, r provider.Request) []byte {
	t.Helper()
	b, err := BodyWith(r, true, Thinking{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func counts(m map[string]int) []int {
	var n []int
	for _, c := range m {
		n = append(n, c)
	}
	return n
}
