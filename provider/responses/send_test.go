package responses

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/internal/send/sendtest"
	"github.com/myelin-run/myelin/provider"
)

// A streamed request goes by the Sender: to the SDK's URL with its
// headers, retried and refused as the SDK retries and refuses, for every
// script of answers the chat wire is held to; the errors are described as
// they were when the SDK sent the requests (sdkDescribe).
func TestTheWireSendsWhatTheSDKSends(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-test")
	srv := sendtest.NewServer(t)
	p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u := p.send.Target().URL.String(); u != srv.URL+"/v1/responses" {
		t.Fatalf("the Sender posts to %s, want %s/v1/responses", u, srv.URL)
	}
	// the client openai.Connect made when the wire was built on the SDK
	client := sdk.NewClient(option.WithAPIKey("k"), option.WithMaxRetries(2), option.WithBaseURL(srv.URL+"/v1"))
	body := []byte(`{"model":"m","input":[],"stream":true}`)
	ctx := context.Background()
	viaSDK := sendtest.Described(func() (*http.Response, error) {
		var resp *http.Response
		err := client.Post(ctx, "responses", nil, &resp, option.WithRequestBody("application/json", body))
		return resp, err
	}, sdkDescribe)
	viaSender := sendtest.Described(func() (*http.Response, error) { return p.send.Post(ctx, body) }, describe)
	for name, answers := range sendtest.OpenAIAnswers(srv.URL) {
		t.Run(name, func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaSender) })
	}
}

// sdkDescribe is describe as it was, when openai.DescribeError read the
// SDK's *openai.Error: what the wire reported, which it is held to.
func sdkDescribe(err error) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("%s: %w", Wire, provider.Unanswered(err))
	}
	body := strings.TrimSpace(apiErr.RawJSON())
	if body == "" && apiErr.Response != nil && apiErr.Response.Body != nil {
		b, _ := io.ReadAll(apiErr.Response.Body)
		apiErr.Response.Body = io.NopCloser(bytes.NewReader(b))
		body = strings.TrimSpace(string(b))
	}
	msg := body
	if msg == "" {
		msg = err.Error()
	}
	we := provider.StatusError(Wire, apiErr.StatusCode, msg, err)
	if apiErr.StatusCode == http.StatusBadRequest {
		if tl := tooLong([]byte(body)); tl != nil {
			tl.Err = we
			return tl
		}
	}
	return we
}

// A request for a whole answer (NoStream) goes by openai.Connect's Whole
// Sender as the SDK sent it: its attempts, headers and described errors
// — with RetryFor set, once, as the SDK sent it then
// (option.WithMaxRetries(0)).
func TestAWholeAnswerIsPostedAsTheSDKPostedIt(t *testing.T) {
	srv := sendtest.NewServer(t)
	body := []byte(`{"model":"m","input":[]}`)
	ctx := context.Background()
	for _, retryFor := range []time.Duration{0, time.Minute} {
		p, err := New(Config{APIKey: "k", BaseURL: srv.URL + "/v1", MaxRetries: 2, NoStream: true, RetryFor: retryFor})
		if err != nil {
			t.Fatal(err)
		}
		opts := []option.RequestOption{option.WithRequestBody("application/json", body)}
		if retryFor > 0 {
			opts = append(opts, option.WithMaxRetries(0))
		}
		client := sdk.NewClient(option.WithAPIKey("k"), option.WithMaxRetries(2), option.WithBaseURL(srv.URL+"/v1"))
		viaSDK := sendtest.Described(func() (*http.Response, error) {
			var resp *http.Response
			err := client.Post(ctx, "responses", nil, &resp, opts...)
			return resp, err
		}, sdkDescribe)
		viaWhole := sendtest.Described(func() (*http.Response, error) { return p.whole.Post(ctx, body) }, describe)
		for name, answers := range sendtest.OpenAIAnswers(srv.URL) {
			t.Run(fmt.Sprintf("RetryFor %v/%s", retryFor, name), func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaWhole) })
		}
	}
}
