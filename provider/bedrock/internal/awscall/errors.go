package awscall

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
)

// Error is a restJson service's refusal (SSO, SSO-OIDC, sign-in): the
// call, the HTTP status, and the error code and message the service
// sent. It implements smithy.APIError as the SDK's errors do. It never
// holds a request's token or key: only what the service answered.
type Error struct {
	// Service and Operation are the call's.
	Service, Operation string
	// StatusCode is the answer's HTTP status.
	StatusCode int
	// Code is the error's type (X-Amzn-ErrorType, else __type, else
	// code), its namespace and URI stripped; "" when the answer has none.
	Code string
	// Message is the answer's message (any case).
	Message string
	// OAuth2Error and Description are the OAuth services' error and
	// error_description members (TOKEN_EXPIRED, invalid_grant, ...).
	OAuth2Error, Description string
	// RequestID is the X-Amzn-RequestId header.
	RequestID string
}

var _ smithy.APIError = (*Error)(nil)

// Error says the call, the status, the code, the OAuth error, the message
// and the request's id.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: HTTP %d: %s", e.Service, e.Operation, e.StatusCode, e.ErrorCode())
	if e.OAuth2Error != "" {
		s += " (" + e.OAuth2Error + ")"
	}
	if m := e.ErrorMessage(); m != "" {
		s += ": " + m
	}
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// ErrorCode is the service's error code; UnknownError when it sent
// none, as the SDK's.
func (e *Error) ErrorCode() string {
	if e.Code == "" {
		return "UnknownError"
	}
	return e.Code
}

// ErrorMessage is the service's message, else its error_description.
func (e *Error) ErrorMessage() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Description
}

// ErrorFault is the server's fault for a 5xx, else the client's.
func (e *Error) ErrorFault() smithy.ErrorFault {
	if e.StatusCode >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode is the answer's status, for the retry classification.
func (e *Error) HTTPStatusCode() int { return e.StatusCode }

// DecodeJSONError reads a restJson service's error answer as smithy-go's
// restjson1 does: the code from the X-Amzn-ErrorType header, else the
// body's __type, else its code (a string), cut at the first ':', then
// after the first '#'; the message from message in any case. A body that
// is not JSON leaves the status alone.
func DecodeJSONError(service, operation string, status int, h http.Header, body []byte) *Error {
	e := &Error{Service: service, Operation: operation, StatusCode: status, RequestID: h.Get("X-Amzn-Requestid")}
	var doc struct {
		Type        string `json:"__type"`
		Code        any    `json:"code"`
		Message     string `json:"message"`
		OAuth2Error string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &doc) // a body that is not JSON leaves only the status
	code := h.Get("X-Amzn-Errortype")
	if code == "" {
		code = doc.Type
	}
	if s, ok := doc.Code.(string); code == "" && ok {
		code = s
	}
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	e.Code, e.Message, e.OAuth2Error, e.Description = code, doc.Message, doc.OAuth2Error, doc.Description
	return e
}
