package anthropic

import (
	"net/http"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// A rate_limit_error or overloaded_error event inside a stream that had
// answered 200 is told to the rate limiter as the 429 or 529 it stands
// for: the key's reason names it, a rate limit lets one request go first,
// and the request counts as one answer.
func TestARefusalInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	for _, tc := range []providertest.StreamRefusal{
		{Name: "rate_limit_error", Limited: true},
		{Name: "overloaded_error"},
		{Name: "api_error"},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			srv := providertest.NewAnthropic(t, providertest.Step{Raw: providertest.AnthropicErrorEvent(tc.Name)})
			key := providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				p, err := New(Config{APIKey: "sk-ant-secret", BaseURL: srv.URL, MaxRetries: -1, Limiter: lim})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, providertest.SampleRequest(), tc)
			if key.Identity != ratelimit.Identity("sk-ant-secret") {
				t.Errorf("the key is %v", key)
			}
		})
	}
}

// On a platform with Authorize (its address routes the requests), the
// refusal in the stream is told under the key the request waited under.
func TestARefusalInsideTheStreamOfAnAuthorizedPlatformIsToldToTheLimiter(t *testing.T) {
	tc := providertest.StreamRefusal{Name: "rate_limit_error", Limited: true}
	srv := providertest.NewAnthropic(t, providertest.Step{Raw: providertest.AnthropicErrorEvent(tc.Name)})
	key := providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
		p, err := NewOn(Platform{Name: "someplatform", Identity: "acct:test", Authorize: func(*http.Request) error { return nil }},
			Config{BaseURL: srv.URL, MaxRetries: -1, Limiter: lim})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, providertest.SampleRequest(), tc)
	if key.Identity != "acct:test" {
		t.Errorf("the key is %v", key)
	}
}
