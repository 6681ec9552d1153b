package gemini

import "fmt"

// APIError is the error the Gemini API answered with: the "error" object
// of an answer whose status is not 2xx, or of a streamed event in place of
// a chunk, read as Google's Go SDK (google.golang.org/genai) reads its
// APIError — the object's members; for a body that is not such an object,
// the answer's status code and status line, the body as the message; for
// an empty body, the status alone. Every error of the wire that the API
// sent wraps one: errors.As(err, &gemini.APIError{}) finds it (the wire's
// error describes it in its own words, provider.StatusError). It is only
// what the API said: the wire's refusals before sending, failures to send
// and cut streams are other errors.
type APIError struct {
	// Code is the HTTP status code (the object's "code").
	Code int `json:"code,omitempty"`
	// Message is the API's message (the object's "message").
	Message string `json:"message,omitempty"`
	// Status is the API's status name, "INVALID_ARGUMENT",
	// "RESOURCE_EXHAUSTED"... (or the HTTP status line when the body held
	// no error object).
	Status string `json:"status,omitempty"`
	// Details are the object's details (google.rpc error details: a
	// RetryInfo, an ErrorInfo...), each as decoded JSON.
	Details []map[string]any `json:"details,omitempty"`
}

// Error says the code, message, status and details, in the words of
// genai's APIError.
func (e APIError) Error() string {
	return fmt.Sprintf("Error %d, Message: %s, Status: %s, Details: %v", e.Code, e.Message, e.Status, e.Details)
}
