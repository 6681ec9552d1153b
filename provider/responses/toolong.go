package responses

import (
	"encoding/json"
	"strings"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/openai"
)

// The Responses API refuses a request longer than the model's context
// window with the error code context_length_exceeded, param "input", and
// the message "Your input exceeds the context window of this model. Please
// adjust your input and try again." — no counts, so a TooLongError from
// this wire has none. It comes two ways:
//
//   - not streamed, as a 400 whose body is {"error":{...}};
//   - streamed, as an event after response.created and response.in_progress
//     (the HTTP status is 200): {"type":"error","sequence_number":2,
//     "error":{"type":"invalid_request_error","code":
//     "context_length_exceeded","message":...,"param":"input"}}, which
//     ends the stream (streamError), or a
//     response.failed event whose response.error has that code.
//
// Both shapes are as recorded in users' reports of the API's answers
// (opencode #6071, dyad #1672); the not-streamed one is the body every
// OpenAI error has. Only a refusal before any output is read as too long.

// apiError is the part of an error object tooLong reads.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Param   string `json:"param"`
}

// tooLong reads a refusal as too long from an error object (JSON), nil
// when it is another error.
func tooLong(body []byte) *provider.TooLongError {
	var e apiError
	if json.Unmarshal(body, &e) != nil {
		return nil
	}
	if e.Code != "context_length_exceeded" && !strings.Contains(strings.ToLower(e.Message), "exceeds the context window") {
		return nil
	}
	return &provider.TooLongError{}
}

// streamError is the error of an error object that ended a stream (an
// event with an "error" field, the SDK's rule): the provider's own object
// as its message, kept (openai.ErrorObject) for provider.Transient to
// read; before any output, a refusal as too long is a
// provider.TooLongError around it.
func streamError(obj []byte, streamed bool) error {
	o := strings.TrimSpace(string(obj))
	wire := &provider.WireError{Msg: "openai-responses: the stream ended with an error: " + o, Err: &openai.ErrorObject{Object: o}}
	if !streamed {
		if tl := tooLong(obj); tl != nil {
			tl.Err = wire
			return tl
		}
	}
	return wire
}
