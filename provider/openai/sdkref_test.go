package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
)

// openai-go as the wire used it before it stopped linking the SDK: the
// reference its requests, errors and answers are held to.

// sdkClient is openai-go's client for endpoint ep, made as Connect made
// it when the wire was built on the SDK: the reference Target is held to.
func sdkClient(ep provider.Endpoint, httpClient *http.Client) sdk.Client {
	opts := []option.RequestOption{option.WithAPIKey(ep.APIKey), option.WithMaxRetries(max(ep.MaxRetries, 0))}
	if ep.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(ep.BaseURL))
	}
	if httpClient != nil {
		opts = append(opts, option.WithHTTPClient(httpClient))
	}
	return sdk.NewClient(opts...)
}

// sdkTarget is the target of client's POST to path, read by a probe as
// the wire read it before it built its own (send.Probe).
func sdkTarget(client sdk.Client, path string) (send.Target, error) {
	var probe send.Probe
	var resp *http.Response
	err := client.Post(context.Background(), path, nil, &resp,
		option.WithRequestBody("application/json", []byte("{}")),
		option.WithMaxRetries(0), option.WithMiddleware(probe.Middleware))
	return probe.Target(err)
}

// sdkDescribeError is DescribeError as it was, reading the SDK's
// *openai.Error: what the wires reported, which DescribeError reading
// *Error is held to.
func sdkDescribeError(wire string, err error, tooLong func(status int, body string) *provider.TooLongError) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		body := sdkErrorBody(apiErr)
		msg := body
		if msg == "" {
			msg = err.Error()
		}
		we := provider.StatusError(wire, apiErr.StatusCode, msg, err)
		if tl := tooLong(apiErr.StatusCode, body); tl != nil {
			tl.Err = we
			return tl
		}
		return we
	}
	return fmt.Errorf("%s: %w", wire, provider.Unanswered(err))
}

// sdkErrorBody is errorBody as it was, for the SDK's error.
func sdkErrorBody(apiErr *sdk.Error) string {
	if raw := strings.TrimSpace(apiErr.RawJSON()); raw != "" {
		return raw
	}
	if apiErr.Response == nil || apiErr.Response.Body == nil {
		return ""
	}
	b, err := io.ReadAll(apiErr.Response.Body)
	apiErr.Response.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sdkDescribe is sdkDescribeError for this wire.
func sdkDescribe(err error) error { return sdkDescribeError("openai", err, tooLong) }
