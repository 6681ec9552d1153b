package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/myelin-run/myelin/internal/gjsonread"
	"github.com/myelin-run/myelin/internal/stainless"
)

// Error is an answer of 400 or more from an endpoint of the OpenAI API,
// as openai-go decodes it into its *openai.Error (which this replaces,
// so that the binary does not link the SDK): the status, the request sent
// (a copy of its own, as is the answer's Request: redacting its header
// for a log changes nothing the wire sends) and the answer (whose Body
// reads the whole body again), and the fields
// of the body's "error" member — message, type, param, code, each a JSON
// string's value or, for a number, a boolean, an object or an array, its
// JSON text, as the SDK reads them — with that member's raw JSON
// (RawJSON), which DescribeError and provider.Transient read. Its text is
// the SDK's, a summary that names the status only: the request's
// headers (the API key) and the provider's fields are never in it, nor in
// any fmt or slog rendering of it.
type Error struct {
	StatusCode int
	Request    *http.Request
	Response   *http.Response
	Message    string
	Type       string
	Param      string
	Code       string
	raw        string
}

// Error is "OpenAI API error: " and the status with its text, the SDK's
// words.
func (e *Error) Error() string {
	if e == nil {
		return "OpenAI API error"
	}
	if text := http.StatusText(e.StatusCode); text != "" {
		return fmt.Sprintf("OpenAI API error: %d %s", e.StatusCode, text)
	}
	return fmt.Sprintf("OpenAI API error: %d", e.StatusCode)
}

// RawJSON is the body's "error" member as it came ("" when the body had
// none; "null" for a null one).
func (e *Error) RawJSON() string { return e.raw }

// Format prints Error's text for every verb, so that %v or %+v of an
// Error (or a pointer to one) shows no request header.
func (e Error) Format(s fmt.State, verb rune) { stainless.FormatError(s, verb, e.Error()) }

// LogValue is Error's text, for slog.
func (e Error) LogValue() slog.Value { return slog.StringValue(e.Error()) }

// refusal is the Error of an answer of 400 or more (send.Refusal): its
// status, the request and answer, and the body's "error" member decoded
// into it. A member that is not an object or null (a string, a number)
// is kept as the raw JSON with no fields, where the SDK returned its JSON
// decoder's error instead of an error answer (TestRefusalsAreDescribedAsTheSDKsWere
// names the difference).
func refusal(req *http.Request, res *http.Response, body []byte) error {
	e := &Error{Request: req, Response: res, StatusCode: res.StatusCode}
	member := errorMember(body)
	e.raw = string(member)
	if len(member) > 0 && member[0] == '{' {
		e.fields(member)
	}
	return e
}

// fields decodes the members of the object obj that the Error has, the
// first of a key that comes twice (the SDK's gjson reads the first),
// each as gjson's String read it (gjsonread.String: a string unescaped
// as gjson unescapes it, not as encoding/json does).
func (e *Error) fields(obj []byte) {
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	if _, err := d.Token(); err != nil {
		return
	}
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return
		}
		key, _ := k.(string)
		var to *string
		switch key {
		case "message":
			to = &e.Message
		case "type":
			to = &e.Type
		case "param":
			to = &e.Param
		case "code":
			to = &e.Code
		}
		if to == nil || seen[key] {
			continue
		}
		seen[key] = true
		*to = gjsonread.String(v)
	}
}
