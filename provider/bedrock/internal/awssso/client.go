package awssso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// Client is how to reach one service, SSO (portal.sso) or SSO-OIDC
// (oidc): its endpoint and its HTTP client and retry policy. The chain
// fills it; the zero HTTPClient, MaxAttempts and Backoff are the SDK's
// defaults. It holds no credentials.
type Client struct {
	// HTTPClient sends the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Endpoint is the service's base URL as the chain resolved it
	// (https://portal.sso.REGION.amazonaws.com, https://oidc.REGION.amazonaws.com
	// or a configured endpoint); the operation's path is appended to it.
	Endpoint string
	// MaxAttempts is how many times a request is sent at most, the first
	// included; 0 or less is the SDK's default, 3.
	MaxAttempts int
	// Backoff is the wait before the attempt after failed attempt n
	// (1-based); nil is the SDK's standard retryer's exponential backoff
	// with jitter, at most 20 seconds. Tests set it to return 0.
	Backoff func(n int) time.Duration
}

// userAgent is the User-Agent of the requests to SSO and SSO-OIDC.
const userAgent = "myelin (aws credentials)"

// maxResponse bounds the bytes read of an answer.
const maxResponse = 1 << 20

// apiError is an error answer of SSO or SSO-OIDC: the service, the
// operation, the HTTP status and the error code and message the service
// sent. It implements smithy.APIError, as the SDK's errors do, and tells
// the retry classification its status and code.
type apiError struct {
	service, operation string
	status             int
	code, message      string
	requestID          string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s %s: HTTP %d", e.service, e.operation, e.status)
	if e.requestID != "" {
		s += " (request " + e.requestID + ")"
	}
	if e.code != "" {
		s += ": " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

// ErrorCode is the service's error code, e.g. UnauthorizedException.
func (e *apiError) ErrorCode() string { return e.code }

// ErrorMessage is the service's message.
func (e *apiError) ErrorMessage() string { return e.message }

// ErrorFault is the server's fault for a 5xx, else the client's.
func (e *apiError) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode is the answer's status, for the retry classification.
func (e *apiError) HTTPStatusCode() int { return e.status }

// decodeAPIError reads an error answer of a REST-JSON service: the code
// from the X-Amzn-Errortype header, else the body's __type, else its code
// (cut at the first ':', then after the first '#', as smithy-go's
// restjson1); the message
// from message or Message, else SSO-OIDC's error_description or error.
func decodeAPIError(service, operation string, resp *http.Response, body []byte) *apiError {
	e := &apiError{service: service, operation: operation, status: resp.StatusCode,
		requestID: resp.Header.Get("X-Amzn-Requestid")}
	var doc struct {
		Type        string `json:"__type"`
		Code        string `json:"code"`
		Message     string `json:"message"`
		MessageCap  string `json:"Message"`
		OAuthError  string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &doc) // a body that is not JSON leaves only the status
	code := resp.Header.Get("X-Amzn-Errortype")
	for _, c := range []string{doc.Type, doc.Code} {
		if code == "" {
			code = c
		}
	}
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	e.code = code
	for _, m := range []string{doc.Message, doc.MessageCap, doc.Description, doc.OAuthError} {
		if e.message == "" {
			e.message = m
		}
	}
	return e
}

// send makes the request newRequest builds, retrying as the SDK's
// standard retryer would, and returns the body of a 2xx answer. It stops
// when ctx is done, returning ctx's error.
func (c Client) send(ctx context.Context, service, operation string, newRequest func(context.Context) (*http.Request, error)) ([]byte, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	// The SDK's standard retryer judges an attempt's error (connection
	// errors, 500/502/503/504, throttling and timeout codes) and, unless
	// Backoff is set, says the wait (AWS_NEW_RETRIES_2026 included).
	std := retry.NewStandard()
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = std.MaxAttempts()
	}
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", service, operation, err)
		}
		body, err := c.attempt(ctx, hc, service, operation, newRequest)
		if err == nil {
			return body, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%s %s: %w", service, operation, ctxErr)
		}
		if n >= attempts || !std.IsErrorRetryable(err) {
			if n > 1 {
				return nil, fmt.Errorf("after %d attempts: %w", n, err)
			}
			return nil, err
		}
		var wait time.Duration
		if c.Backoff != nil {
			wait = c.Backoff(n)
		} else if wait, err = std.RetryDelay(n, err); err != nil {
			return nil, fmt.Errorf("%s %s: backoff: %w", service, operation, err)
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, fmt.Errorf("%s %s: %w", service, operation, ctx.Err())
			case <-timer.C:
			}
		}
	}
}

// attempt sends the request once: the body of a 2xx answer, an *apiError
// for another status, or the transport's error.
func (c Client) attempt(ctx context.Context, hc *http.Client, service, operation string, newRequest func(context.Context) (*http.Request, error)) ([]byte, error) {
	req, err := newRequest(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s %s: build request: %w", service, operation, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", service, operation, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", service, operation, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, decodeAPIError(service, operation, resp, body)
	}
	return body, nil
}

// endpointURL is the operation's URL: the endpoint without a trailing
// slash, then path.
func (c Client) endpointURL(service, path string) (string, error) {
	if c.Endpoint == "" {
		return "", errors.New(service + ": no endpoint")
	}
	return strings.TrimSuffix(c.Endpoint, "/") + path, nil
}
