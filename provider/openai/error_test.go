package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/provider"
)

// refusalCases are error answers: a status and a body.
var refusalCases = []struct {
	name   string
	status int
	body   string
}{
	{"an error object", 400, `{"error":{"message":"model not found","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
	{"a string code", 404, `{"error":{"message":"m","type":"t","param":"p","code":"c"}}`},
	{"a numeric code", 400, `{"error":{"message":"m","code":400}}`},
	{"a float code", 503, `{"error":{"message":"m","code":1.50e1}}`},
	{"a code of 20 digits", 400, `{"error":{"message":"m","code":12345678901234567890}}`},
	{"a code past float64's range", 400, `{"error":{"message":"m","code":-1e400,"param":1E2}}`},
	{"a code true", 400, `{"error":{"message":"m","code":true}}`},
	{"a code that is an object", 400, `{"error":{"message":"m","code":{"a":[1, 2]}}}`},
	{"a numeric message", 400, `{"error":{"message":5}}`},
	{"a null error", 400, `{"error":null}`},
	{"an empty error", 400, `{"error":{}}`},
	{"two error members", 400, `{"error":{"message":"first"},"error":{"message":"second"}}`},
	{"a key twice in the error", 400, `{"error":{"message":"first","message":"second"}}`},
	{"spaces around", 429, " \n{ \"error\" : {\"message\":\"x\", \"code\":\"rate_limit_exceeded\"} } \n"},
	{"escapes", 400, `{"error":{"message":"caf\u00e9 \"q\" \\ \n","type":"\u0074"}}`},
	{"too long", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
	{"too long at llama.cpp, a 500", 500, `{"error":{"code":500,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`},
	{"a quota spent", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
	{"a rate limit", 429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
	{"a server error", 500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`},
	{"no error member: vLLM's at the top", 400, `{"object":"error","message":"maximum context length is 10 tokens","type":"BadRequestError","code":400}`},
	{"no error member: another object", 422, `{"detail":[{"loc":["body","model"],"msg":"field required"}]}`},
	{"no error member: an empty object", 400, `{}`},
	{"a cut body, after the error", 400, `{"error":{"message":"cut after"},"x":`},
	{"a cut body, in the error", 400, `{"error":{"message":"cut in`},
	{"a cut body, before the error", 500, `{"id":`},
	{"not JSON", 502, `<html>Bad Gateway</html>`},
	{"an empty body", 503, ``},
	{"a JSON array", 400, `[{"error":{"message":"in a list"}}]`},
	{"JSON null", 400, `null`},
	{"a nested error", 400, `{"response":{"error":{"message":"deep"}}}`},
}

// refusalsDiffer are the cases whose described error differs from the
// SDK's, and why. The SDK returned its JSON decoder's error for an
// "error" member that is not an object or null, dropping the status; the
// wire's Error keeps the status and the member as the error object. Of a
// body cut inside its "error" member, the SDK kept the cut member (gjson
// reads what there is), the wire the whole body, as its streamed
// requests have reported it since the Sender posted them (errorMember).
var refusalsDiffer = map[string]string{
	"a cut body, in the error": `openai: 400 Bad Request: {"error":{"message":"cut in`,
	"an error string":          `openai: 400 Bad Request: "plain"`,
	"an error number":          `openai: 429 Too Many Requests: 42`,
	"an error list":            `openai: 400 Bad Request: [{"message":"m"}]`,
}

// TestRefusalsAreDescribedAsTheSDKsWere posts each refusal to the SDK and
// to the wire's Sender, on loopback, and requires DescribeError of the
// wire's *Error to report what it reported of the SDK's *openai.Error:
// the text, a TooLongError and its counts, provider.Transient, and the
// error's status, fields and raw JSON.
func TestRefusalsAreDescribedAsTheSDKsWere(t *testing.T) {
	cases := refusalCases
	for _, c := range []struct{ name, body string }{
		{"an error string", `{"error":"plain"}`},
		{"an error number", `{"error":42}`},
		{"an error list", `{"error":[{"message":"m"}]}`},
	} {
		status := 400
		if c.name == "an error number" {
			status = 429
		}
		cases = append(cases, struct {
			name   string
			status int
			body   string
		}{c.name, status, c.body})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			ep := provider.Endpoint{APIKey: "k", BaseURL: srv.URL + "/v1"}
			body := []byte(`{"model":"m","messages":[]}`)
			var res *http.Response
			client := sdkClient(ep, nil)
			sdkErr := client.Post(context.Background(), path, nil, &res, option.WithRequestBody("application/json", body))
			target, err := Target(ep, path)
			if err != nil {
				t.Fatal(err)
			}
			_, ownErr := Sender(target, nil, 0, Limits{Wire: "openai"}).Post(context.Background(), body)
			if sdkErr == nil || ownErr == nil {
				t.Fatalf("errors %v, %v: want both", sdkErr, ownErr)
			}
			want, got := sdkDescribe(sdkErr), describe(ownErr)
			if differs, ok := refusalsDiffer[tc.name]; ok {
				if got.Error() != differs {
					t.Fatalf("described %q, want %q (the SDK's: %q)", got, differs, want)
				}
				if want.Error() == differs {
					t.Fatalf("the SDK's is %q too: the case no longer differs", want)
				}
				return
			}
			if got.Error() != want.Error() {
				t.Fatalf("described\n %q\nthe SDK's\n %q", got, want)
			}
			gotTL, gotOK := provider.IsTooLong(got)
			wantTL, wantOK := provider.IsTooLong(want)
			if gotOK != wantOK || (gotOK && (gotTL.Tokens != wantTL.Tokens || gotTL.Output != wantTL.Output || gotTL.Limit != wantTL.Limit)) {
				t.Fatalf("too long: %v %+v, the SDK's %v %+v", gotOK, gotTL, wantOK, wantTL)
			}
			if g, w := provider.Transient(got), provider.Transient(want); g != w {
				t.Fatalf("Transient %v, the SDK's %v", g, w)
			}
			var own *Error
			var theirs *sdk.Error
			if errors.As(want, &theirs) != errors.As(got, &own) {
				t.Fatalf("an *Error in %v: %v; an *openai.Error in %v: %v", got, own != nil, want, theirs != nil)
			}
			if own == nil {
				return
			}
			g := fmt.Sprintf("%d %q %q %q %q %q", own.StatusCode, own.Message, own.Type, own.Param, own.Code, own.RawJSON())
			w := fmt.Sprintf("%d %q %q %q %q %q", theirs.StatusCode, theirs.Message, theirs.Type, theirs.Param, theirs.Code, theirs.RawJSON())
			if g != w {
				t.Fatalf("status, message, type, param, code, raw:\n %s\nthe SDK's\n %s", g, w)
			}
		})
	}
}

// An Error printed or logged shows its summary, never the request (whose
// header holds the API key) nor the provider's fields.
func TestAnErrorShowsNoSecret(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/chat/completions", nil)
	req.Header.Set("Authorization", "Bearer sk-secret")
	e := &Error{StatusCode: 401, Request: req, Message: "Incorrect API key provided: sk-secret", raw: `{"message":"sk-secret"}`}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "err", *e, "ptr", e)
	for _, s := range []string{fmt.Sprint(e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", *e), fmt.Sprintf("%v", *e), fmt.Sprintf("%q", e), e.Error(), logged.String()} {
		if strings.Contains(s, "sk-secret") {
			t.Fatalf("%q shows the key", s)
		}
		if !strings.Contains(s, "OpenAI API error: 401 Unauthorized") {
			t.Fatalf("%q is not the summary", s)
		}
	}
}

// FuzzErrorFieldsAreTheSDKs holds the fields an Error decodes of an
// "error" member that is a JSON object to those the SDK's *openai.Error
// decoded of it, whatever its bytes (those that are not UTF-8 are kept,
// as the SDK's gjson kept them).
func FuzzErrorFieldsAreTheSDKs(f *testing.F) {
	for _, tc := range refusalCases {
		if m := errorMember([]byte(tc.body)); len(m) > 0 && m[0] == '{' {
			f.Add(m)
		}
	}
	// a lone surrogate before another escape: gjson drops the second's
	// character, which encoding/json keeps (H3's find)
	f.Add([]byte(`{"message":"\ud800\u0041"}`))
	f.Add([]byte("{\"message\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) || len(bytes.TrimSpace(obj)) == 0 || bytes.TrimSpace(obj)[0] != '{' {
			return
		}
		var theirs sdk.Error
		if err := theirs.UnmarshalJSON(obj); err != nil {
			t.Skip("the SDK does not decode it")
		}
		var own Error
		own.fields(bytes.TrimSpace(obj))
		g := fmt.Sprintf("%q %q %q %q", own.Message, own.Type, own.Param, own.Code)
		w := fmt.Sprintf("%q %q %q %q", theirs.Message, theirs.Type, theirs.Param, theirs.Code)
		if g != w {
			t.Fatalf("fields of %s:\n %s\nthe SDK's\n %s", obj, g, w)
		}
	})
}
