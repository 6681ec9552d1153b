package openai

import (
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// An error chunk inside a stream that had answered 200 — a
// rate_limit_exceeded, a server_error — is told to the rate limiter as
// the 429 or 500 it stands for.
func TestAnErrorChunkInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	for _, tc := range []struct {
		refusal providertest.StreamRefusal
		chunk   string
	}{
		{providertest.StreamRefusal{Name: "rate_limit_exceeded", Limited: true},
			`{"error":{"message":"` + providertest.QuotedKey + `","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{providertest.StreamRefusal{Name: "server_error"},
			`{"error":{"message":"` + providertest.QuotedKey + `","type":"server_error","param":null,"code":null}}`},
	} {
		t.Run(tc.refusal.Name, func(t *testing.T) {
			first := `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
			srv := providertest.NewOpenAI(t, providertest.Step{Raw: "data: " + first + "\n\ndata: " + tc.chunk + "\n\n"})
			providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				p, err := New(Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, Limiter: lim})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, providertest.SampleRequest(), tc.refusal)
		})
	}
}
