// Package anthropicsdk is anthropic-sdk-go as the Anthropic wire
// (provider/anthropic) and its platforms used it before they stopped
// linking the SDK: a client with a platform's options, posting the
// first-party body. It is the reference the platforms' tests hold what
// they send to; only tests import it, and nothing it does may reach the
// binary (cmd/myelin's link test).
package anthropicsdk

import (
	"context"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
)

// Wire sends a request as the wire did through the SDK: the first-party
// body (First's Body: its thinking, cache lifetime and NoStream), posted
// by a client made of Options after the retries (none), HTTPClient and
// the anthropic-version header Version (which the SDK's platform
// middleware moved into the body), as anthropic.NewOn made it; streamed with Client.Post, whole with
// Client.Messages.New, each with the thinking's beta header. Its answers
// are not read: Complete returns the SDK's error, or nothing.
type Wire struct {
	First      *anthropic.Provider
	Options    []option.RequestOption
	HTTPClient *http.Client
	Version    string
	Thinking   anthropic.Thinking
	NoStream   bool
}

// Complete posts req's body through the SDK (provider.Provider).
func (w Wire) Complete(ctx context.Context, req provider.Request, _ func(string)) (provider.Response, error) {
	body, err := w.First.Body(req)
	if err != nil {
		return provider.Response{}, err
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if w.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(w.HTTPClient))
	}
	if w.Version != "" {
		opts = append(opts, option.WithHeader("anthropic-version", w.Version))
	}
	client := sdk.NewClient(append(opts, w.Options...)...)
	call := []option.RequestOption{option.WithRequestBody("application/json", body)}
	if w.Thinking.Interleaved {
		call = append(call, option.WithHeaderAdd("anthropic-beta", anthropic.InterleavedBeta))
	}
	if w.NoStream {
		_, err = client.Messages.New(ctx, sdk.MessageNewParams{}, call...)
		return provider.Response{}, err
	}
	var resp *http.Response
	if err := client.Post(ctx, "v1/messages", nil, &resp, call...); err != nil {
		return provider.Response{}, err
	}
	return provider.Response{}, resp.Body.Close()
}
