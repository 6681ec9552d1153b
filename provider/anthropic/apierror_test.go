package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// The SDK's *anthropic.Error as the wire made it before it made its own
// (send.go's refusal, stream.go's streamError): the reference Error,
// refusalError and streamErrorOf are held to.

// sdkRefusal is send.go's refusal as it was, on the SDK's error.
func sdkRefusal(req *http.Request, res *http.Response, body []byte) error {
	sent := *req
	if to := res.Request; to != nil {
		u := *req.URL
		u.Scheme, u.Host, u.Path, u.RawPath = to.URL.Scheme, to.URL.Host, to.URL.Path, to.URL.RawPath
		sent.Method, sent.URL = to.Method, &u
	}
	e := &sdk.Error{Request: &sent, Response: res, StatusCode: res.StatusCode,
		RequestID: res.Header.Get("request-id"), WorkspaceID: res.Header.Get("anthropic-workspace-id")}
	if err := e.UnmarshalJSON(body); err != nil {
		return err
	}
	return e
}

// sdkStreamError is stream.go's streamError as it was, on the SDK's error.
func sdkStreamError(resp *http.Response, data []byte) error {
	aerr := &sdk.Error{}
	if resp != nil {
		sent := *resp
		if resp.Request != nil {
			sent.Request = resp.Request.Clone(resp.Request.Context())
		}
		aerr.Request = sent.Request
		aerr.Response = &sent
		aerr.StatusCode = resp.StatusCode
		aerr.RequestID = resp.Header.Get("request-id")
		aerr.WorkspaceID = resp.Header.Get("anthropic-workspace-id")
	}
	if aerr.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return aerr
}

// errorBodies are bodies of error answers and data of error events: the
// API's own error objects, the platforms', and what a proxy or a cut
// connection leaves.
var errorBodies = []string{
	`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200049 tokens > 200000 maximum"}}`,
	`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
	`{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}}`,
	`{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission"}}`,
	`{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`,
	`{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
	`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
	`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	`{"type":"error","error":{"type":"timeout_error","message":"Request timed out"}}`,
	`{"type":"error","error":{"type":"invalid_request_error","message":"bad"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
	`{"type":"error","error":{"type":"invalid_request_error","message":"bad","details":{"error_code":"thread_not_found","extra":1}},"request_id":"req_1"}`,
	`{"type":"error","error":{"details":{"error_code":7}}}`,
	`{"type":"error","error":{"details":"thread_not_found"}}`,
	`{"type":"error","error":{"type":"api_error","message":"m","param":null,"extra":[1,{"a":"b"}]},"more":{"x":true}}`,
	`  {"type":"error","error":{"type":"api_error","message":"with blanks around"}}` + "\n\t ",
	// Bedrock's REST JSON errors, and its exception frames' payload
	`{"message":"Input is too long for requested model."}`,
	`{"Message":"The security token included in the request is invalid."}`,
	`{"message":"Too many requests, please wait before trying again."}`,
	// Vertex: Google's error, alone or in an array
	`{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}`,
	`[{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}]`,
	`{"error":{"code":404,"message":"Publisher Model was not found","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo"}]}}`,
	// not JSON
	"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body>\r\n</html>\r\n",
	``,
	`   `,
	`upstream connect error or disconnect/reset before headers`,
	`{"type":"error","error":{"type":"api_error","mess`,
	`{"type":"error","error":{"type":"api_error","message":"cut"}`,
	`{"type":"error","error":{"type":"api_error","message":"two"}} {}`,
	"\xff\xfe{\"error\":{}}",
	// JSON that is not an error object
	`null`, ` 12 `, `-0.50e1`, `"a string"`, `true`, `[]`, `{}`, `{"error":null}`, `{"error":"just a string"}`,
	`{"error":{"message":null,"type":null}}`,
	`{"error":[{"message":"in an array","type":"x"}]}`,
	// members of other types
	`{"error":{"message":12345678901234567890123,"type":-7}}`,
	`{"error":{"message":1.50,"type":1e400}}`,
	`{"error":{"message":-1e-7,"type":false}}`,
	`{"error":{"message":{"text":"an object" },"type":[1, 2]}}`,
	`{"error":{"message":true,"type":""}}`,
	// escapes, bytes that are not UTF-8, repeated and escaped names
	`{"error":{"message":"quote \" slash \/ back \\ \b\f\n\r\t \u00e9 \ud83d\ude00","type":"t\u0041"}}`,
	`{"error":{"message":"lone \ud800\u0041 and \udc00z and \ud800","type":"\udfff\ud800"}}`,
	"{\"error\":{\"message\":\"not UTF-8: \xff\xc3\",\"type\":\"\xe2\x82\"}}",
	"{\"error\":{\"message\":\"not UTF-8 \xff then \\n escaped\"}}",
	`{"error":{"type":"first"},"error":{"message":"second","type":"second"}}`,
	`{"error":{"message":null},"error":{"message":"second"}}`,
	`{"error":{"message":"a","message":"b","type":"c","type":"d"}}`,
	`{"err\u006fr":{"m\u0065ssage":"escaped names","\u0074ype":"t"}}`,
	`{"error":"x","error":{"message":"after a string"}}`,
	`{"error":[{"message":"in an array"}],"error":{"message":"after an array","type":"t"}}`,
	`{"error":{"m":{"message":"deeper"}},"error":{"message":"after an object without"}}`,
	`{"error":{"details":{"error_code":"a"},"details":{"error_code":"b"}}}`,
}

// answerOf is an answer of status with body, to a POST that was
// redirected (its Request is to another host and path), with the
// request ID and workspace headers when ids.
func answerOf(t testing.TB, status int, body string, ids bool) (*http.Request, *http.Response) {
	req, err := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages?beta=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "sk-ant-secret")
	to, err := http.NewRequest(http.MethodGet, "https://eu.example.com/v1/messages%2Fx", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := &http.Response{StatusCode: status, Status: fmt.Sprint(status), Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(body)), Request: to}
	if ids {
		res.Header.Set("Request-Id", "req_0123")
		res.Header.Set("Anthropic-Workspace-Id", "wrkspc_01")
	}
	return req, res
}

// sameAsSDKs fails t when got, an error the wire made, is not want, the
// SDK's of the same answer: error or not, text, status, message, type,
// body, IDs, error code, and the request and answer held.
func sameAsSDKs(t *testing.T, got, want error) {
	t.Helper()
	var theirs *sdk.Error
	var own *Error
	if errors.As(want, &theirs) != errors.As(got, &own) {
		t.Fatalf("got %T %v, the SDK's %T %v", got, got, want, want)
	}
	if theirs == nil {
		if got.Error() != want.Error() {
			t.Fatalf("got %q, the SDK's %q", got.Error(), want.Error())
		}
		return
	}
	g := fmt.Sprintf("text %q\nstatus %d message %q type %q\nraw %q\nrequest-id %q workspace %q", own.Error(),
		own.StatusCode, own.Message, own.Type, own.RawJSON(), own.RequestID, own.WorkspaceID)
	w := fmt.Sprintf("text %q\nstatus %d message %q type %q\nraw %q\nrequest-id %q workspace %q", theirs.Error(),
		theirs.StatusCode, theirs.Message, string(theirs.Type()), theirs.RawJSON(), theirs.RequestID, theirs.WorkspaceID)
	if g != w {
		t.Fatalf("got\n%s\nthe SDK's\n%s", g, w)
	}
	// the SDK's gjson reads a code even out of a body that is not JSON
	if json.Valid([]byte(theirs.RawJSON())) && own.ErrorCode() != string(theirs.ErrorCode()) {
		t.Fatalf("error code %q, the SDK's %q", own.ErrorCode(), theirs.ErrorCode())
	}
	if (own.Request == nil) != (theirs.Request == nil) || (own.Response == nil) != (theirs.Response == nil) {
		t.Fatalf("request %v answer %v, the SDK's %v %v", own.Request != nil, own.Response != nil, theirs.Request != nil, theirs.Response != nil)
	}
	if own.Request != nil && (own.Request.Method != theirs.Request.Method || own.Request.URL.String() != theirs.Request.URL.String() ||
		own.Request.Header.Get("X-Api-Key") != theirs.Request.Header.Get("X-Api-Key")) {
		t.Fatalf("request %s %s, the SDK's %s %s", own.Request.Method, own.Request.URL, theirs.Request.Method, theirs.Request.URL)
	}
	if own.Response != nil && (own.Response.StatusCode != theirs.Response.StatusCode || (own.Response.Request == nil) != (theirs.Response.Request == nil)) {
		t.Fatalf("answer %d, the SDK's %d", own.Response.StatusCode, theirs.Response.StatusCode)
	}
}

// An answer of 400 or more is the same error as the SDK made of it:
// refusalError is refusal as it was, for every status and body.
func TestTheAPIErrorIsTheSDKs(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 413, 429, 500, 529} {
		for i, body := range errorBodies {
			for _, ids := range []bool{true, false} {
				t.Run(fmt.Sprintf("%d/%d/%v", status, i, ids), func(t *testing.T) {
					req, res := answerOf(t, status, body, ids)
					got := refusalError(req, res, []byte(body))
					sameAsSDKs(t, got, sdkRefusal(req, res, []byte(body)))
					if e := got.(*Error); e.Response != res {
						t.Fatal("the error does not hold the answer")
					}
				})
			}
		}
	}
	t.Run("not redirected", func(t *testing.T) {
		req, res := answerOf(t, 429, errorBodies[6], true)
		res.Request = nil
		sameAsSDKs(t, refusalError(req, res, []byte(errorBodies[6])), sdkRefusal(req, res, []byte(errorBodies[6])))
	})
}

// An error event inside a stream is the same error as the SDK's stream
// made of it: streamErrorOf is streamError as it was, for every event's
// data, with and without the answer.
func TestTheStreamErrorIsTheSDKs(t *testing.T) {
	data := append([]string{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
		`{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}`,
	}, errorBodies...)
	for i, d := range data {
		for _, ids := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/%v", i, ids), func(t *testing.T) {
				_, resp := answerOf(t, http.StatusOK, "", ids)
				sameAsSDKs(t, streamErrorOf(resp, []byte(d)), sdkStreamError(resp, []byte(d)))
			})
		}
		t.Run(fmt.Sprintf("%d/no answer", i), func(t *testing.T) {
			sameAsSDKs(t, streamErrorOf(nil, []byte(d)), sdkStreamError(nil, []byte(d)))
		})
	}
}

// The request a stream's error holds is its own: redacting it (as one
// does before logging it) leaves the answer's request, whose header a
// first attempt shares with the Sender's Target, as it was.
func TestAStreamErrorsRequestIsItsOwn(t *testing.T) {
	_, resp := answerOf(t, http.StatusOK, "", true)
	resp.Request.Header.Set("X-Api-Key", "sk-ant-secret")
	var e *Error
	if !errors.As(streamErrorOf(resp, []byte(errorBodies[8])), &e) {
		t.Fatal("not an *Error")
	}
	e.Request.Header.Del("X-Api-Key")
	e.Response.Request.Header.Del("X-Api-Key")
	e.Response.StatusCode = 0
	if resp.Request.Header.Get("X-Api-Key") != "sk-ant-secret" || resp.StatusCode != http.StatusOK {
		t.Fatal("redacting the error's request changed the answer's")
	}
}

// An Error printed or logged shows its text, never the request's header
// (the API key), whatever the verb: the SDK's %#v showed it.
func TestAnAPIErrorShowsNoHeader(t *testing.T) {
	req, res := answerOf(t, 401, errorBodies[1], true)
	e := refusalError(req, res, []byte(errorBodies[1])).(*Error)
	text := `GET "https://eu.example.com/v1/messages%2Fx?beta=true": 401 Unauthorized (Request-ID: req_0123) (Workspace-ID: wrkspc_01) ` + errorBodies[1]
	if e.Error() != text {
		t.Fatalf("text %q, want %q", e.Error(), text)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "err", *e, "ptr", e)
	for _, s := range []string{fmt.Sprint(e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e), fmt.Sprintf("%#v", *e), fmt.Sprintf("%v", *e), fmt.Sprintf("%q", e), logged.String()} {
		if strings.Contains(s, "sk-ant-secret") {
			t.Fatalf("%q shows the key", s)
		}
		if !strings.Contains(s, "401 Unauthorized") {
			t.Fatalf("%q is not the text", s)
		}
	}
}

// An Error's message is unescaped as gjson does (gjsonread.String), which
// encoding/json does not: the fuzz target reaches these only by chance.
func TestStringsAreUnescapedAsGjsonDoes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\"raw \xff\"", "raw \xff"},
		{`"\ud83d\ude00"`, "\U0001F600"},
		{`"\ud800\u0041z"`, "\uFFFDz"},
		{`"\udc00\ud800"`, "\uFFFD"},
		{`"\ud800"`, "\uFFFD"},
		{`"\ud800x\u0041"`, "\uFFFDxA"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
	} {
		body := []byte(`{"error":{"message":` + tc.in + `}}`)
		var own Error
		own.decode(body)
		if own.Message != tc.want {
			t.Errorf("%s: %q, want %q", tc.in, own.Message, tc.want)
		}
		var theirs sdk.Error
		_ = theirs.UnmarshalJSON(body)
		if theirs.Message != tc.want {
			t.Errorf("%s: the SDK's %q, want %q", tc.in, theirs.Message, tc.want)
		}
	}
}

// FuzzTheAPIErrorIsTheSDKs holds refusalError and streamErrorOf to the
// SDK's errors of the same body or event data, whatever its bytes.
func FuzzTheAPIErrorIsTheSDKs(f *testing.F) {
	for _, b := range errorBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, res := answerOf(t, 400, string(body), true)
		sameAsSDKs(t, refusalError(req, res, body), sdkRefusal(req, res, bytes.Clone(body)))
		_, resp := answerOf(t, http.StatusOK, "", true)
		sameAsSDKs(t, streamErrorOf(resp, body), sdkStreamError(resp, bytes.Clone(body)))
	})
}
