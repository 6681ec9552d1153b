package provider

import (
	"fmt"
	"net/http"
)

// WireError is a wire's error: the provider's own message as its text,
// the SDK's error beneath it (Unwrap), so that errors.As still reaches the
// SDK's status and request id. Every wire reports a provider's error
// answer this way; it carries no behaviour of its own.
type WireError struct {
	Msg string
	Err error
	// Status is the HTTP status of the provider's error answer
	// (StatusError); 0 when the error is not one.
	Status int
}

// StatusError is the WireError for an error answer of HTTP status from
// wire, holding msg: "wire: 400 Bad Request: msg".
func StatusError(wire string, status int, msg string, err error) *WireError {
	return &WireError{Msg: fmt.Sprintf("%s: %d %s: %s", wire, status, http.StatusText(status), msg), Err: err, Status: status}
}

// StatusCode is e's HTTP status, 0 when it has none: what a span's
// error.type says (telemetry.ErrorType).
func (e *WireError) StatusCode() int { return e.Status }

// Error is the provider's message.
func (e *WireError) Error() string { return e.Msg }

// Unwrap returns the SDK's error.
func (e *WireError) Unwrap() error { return e.Err }
