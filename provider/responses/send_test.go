package responses

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/myelin-run/myelin/internal/send/sendtest"
)

// A streamed request goes by the Sender: to the SDK's URL with its
// headers, retried and refused as the SDK retries and refuses, for every
// script of answers the chat wire is held to.
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
	body := []byte(`{"model":"m","input":[],"stream":true}`)
	ctx := context.Background()
	viaSDK := sendtest.Described(func() (*http.Response, error) {
		var resp *http.Response
		err := p.client.Post(ctx, "responses", nil, &resp, option.WithRequestBody("application/json", body))
		return resp, err
	}, describe)
	viaSender := sendtest.Described(func() (*http.Response, error) { return p.send.Post(ctx, body) }, describe)
	for name, answers := range sendtest.OpenAIAnswers(srv.URL) {
		t.Run(name, func(t *testing.T) { sendtest.Same(t, srv, answers, viaSDK, viaSender) })
	}
}
