package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/myelin-run/myelin/internal/gjsonread"
	"github.com/myelin-run/myelin/internal/stainless"
)

// Error is an error answer of Anthropic's API or of a platform's
// (Bedrock, Vertex): an answer of 400 or more, or an error event inside
// a stream answered 200. It replaces anthropic-sdk-go's *anthropic.Error,
// which the wire made before it stopped linking the SDK: a program that
// read the SDK's with errors.As reads this one, with the same fields and
// the same text (Error), made of the same answers.
//
// StatusCode, RequestID (the request-id header) and WorkspaceID (the
// anthropic-workspace-id header) are the answer's; Type and Message are
// the body's error.type and error.message read as the SDK read them (a
// string's value; a number, a boolean, an object or an array as its
// JSON text; "" when absent or null), and RawJSON is the body. Request
// is the request the answer came to and Response the answer (whose Body
// reads the body again).
//
// An Error must not share its Request's header or URL with a request the
// wire sends later: its holder may change them (a log's redaction of the
// key), so it holds copies. Its text names the method, the URL, the
// status, the two IDs and the body, never a request header; no fmt verb
// or slog rendering of it shows more.
type Error struct {
	StatusCode  int
	RequestID   string
	WorkspaceID string
	// Type is error.type, e.g. "rate_limit_error" or "overloaded_error"
	// (the SDK's Type method). It is whatever the body says, not checked
	// against the types the API documents.
	Type string
	// Message is error.message, the provider's own words, whose wording
	// can change: branch on Type, ErrorCode or StatusCode rather than on it.
	Message  string
	Request  *http.Request
	Response *http.Response
	raw      string
}

// Error is the SDK's text: the request's method and quoted URL (when
// there is a request), the status and its text, " (Request-ID: …)" and
// " (Workspace-ID: …)" when the answer had them, and the body.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Request != nil {
		msg = fmt.Sprintf("%s %q: %s", e.Request.Method, e.Request.URL, msg)
	}
	if e.RequestID != "" {
		msg += fmt.Sprintf(" (Request-ID: %s)", e.RequestID)
	}
	if e.WorkspaceID != "" {
		msg += fmt.Sprintf(" (Workspace-ID: %s)", e.WorkspaceID)
	}
	if e.raw != "" {
		msg += " " + e.raw
	}
	return msg
}

// RawJSON is the body as the SDK kept it: when it is JSON, from its first
// non-blank byte on (without the blanks after it, unless it is an object
// or an array); otherwise every byte of it ("" for an empty body).
func (e *Error) RawJSON() string { return e.raw }

// ErrorCode is the body's error.details.error_code when it is a string,
// the stable code the API gives for some causes (the SDK's ErrorCode);
// "" when there is none, and for a body that is not JSON (where the
// SDK's lenient reader may find one in, say, a body cut off after it).
func (e *Error) ErrorCode() string {
	v, ok := member([]byte(e.raw), "error", "details", "error_code")
	if !ok || len(v) == 0 || v[0] != '"' {
		return ""
	}
	return gjsonread.String(v)
}

// Format prints Error's text for every verb (with its flags for %s, %q,
// %x and %X), so that %#v or %+v of an Error or a pointer to one shows no
// request header: the SDK's %#v printed the whole struct.
func (e Error) Format(s fmt.State, verb rune) { stainless.FormatError(s, verb, e.Error()) }

// LogValue is Error's text, for slog.
func (e Error) LogValue() slog.Value { return slog.StringValue(e.Error()) }

// refusalError is the Error of an answer of 400 or more (a send.Refusal):
// its status, request ID and workspace, the request req with the method
// and URL (scheme, host and path; req's query kept) of the one the answer
// came to (res.Request, after a redirect), the answer res, and body
// decoded into it. The SDK's decoding never failed (a body that is not
// JSON is kept whole as RawJSON), so neither does this: the error is
// always an *Error.
func refusalError(req *http.Request, res *http.Response, body []byte) error {
	sent := *req
	if to := res.Request; to != nil {
		u := *req.URL
		u.Scheme, u.Host, u.Path, u.RawPath = to.URL.Scheme, to.URL.Host, to.URL.Path, to.URL.RawPath
		sent.Method, sent.URL = to.Method, &u
	}
	e := &Error{Request: &sent, Response: res, StatusCode: res.StatusCode,
		RequestID: res.Header.Get("request-id"), WorkspaceID: res.Header.Get("anthropic-workspace-id")}
	e.decode(body)
	return e
}

// streamErrorOf is the Error of an error event whose data is data, in
// the stream resp brings (nil: none): the status, request ID and
// workspace of resp, a copy of resp and of its request (resp.Request of
// a first attempt holds the Sender's Target header, shared by every later
// request, and the error's holder may change it), and data decoded into
// it as a body is. It is always an *Error: the SDK's fallback for data it
// could not decode ("received error while streaming: …") was never
// reached, its decoding never failing.
func streamErrorOf(resp *http.Response, data []byte) error {
	e := &Error{}
	if resp != nil {
		sent := *resp
		if resp.Request != nil {
			sent.Request = resp.Request.Clone(resp.Request.Context())
		}
		e.Request = sent.Request
		e.Response = &sent
		e.StatusCode = resp.StatusCode
		e.RequestID = resp.Header.Get("request-id")
		e.WorkspaceID = resp.Header.Get("anthropic-workspace-id")
	}
	e.decode(data)
	return e
}

// decode reads body into e as the SDK's UnmarshalJSON did: a body that
// is not valid JSON (empty, HTML, cut off) is kept whole with no Type or
// Message; of JSON, RawJSON is what gjson.Parse keeps of it (from its
// first non-blank byte; an object's or array's trailing blanks too) and
// Type and Message are error.type and error.message as gjson's Get finds
// and its String reads them (member, gjsonread.String).
func (e *Error) decode(body []byte) {
	if !json.Valid(body) {
		e.raw = string(body)
		return
	}
	raw := bytes.TrimLeft(body, " \t\r\n")
	if raw[0] != '{' && raw[0] != '[' {
		raw = bytes.TrimRight(raw, " \t\r\n")
	}
	e.raw = string(raw)
	if v, ok := member(raw, "error", "message"); ok {
		e.Message = gjsonread.String(v)
	}
	if v, ok := member(raw, "error", "type"); ok {
		e.Type = gjsonread.String(v)
	}
}

// member is the value at the path keys in data, valid JSON, as gjson's
// Get finds it: in an object, the first member named keys[0] (its name
// unescaped) that is the last key or, an object, holds the rest of the
// path; a later member of that name is looked into when an earlier one
// does not hold it. An array is not looked into.
func member(data []byte, keys ...string) (json.RawMessage, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, false
		}
		// Names are compared as encoding/json decodes them, where gjson
		// unescapes them its own way: the two differ only where a name
		// is not ASCII (a lone surrogate, bytes that are not UTF-8),
		// and the keys are ASCII.
		if k != keys[0] {
			continue
		}
		if len(keys) == 1 {
			return v, true
		}
		if len(v) > 0 && v[0] == '{' {
			if m, ok := member(v, keys[1:]...); ok {
				return m, true
			}
		}
	}
	return nil, false
}
