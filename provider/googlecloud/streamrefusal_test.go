package googlecloud

import (
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// An overloaded_error or rate_limit_error event inside a stream that had
// answered 200 (the gateway streams Anthropic's events) is told to the
// rate limiter as the 529 or 429 it stands for.
func TestARefusalInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	for _, tc := range []providertest.StreamRefusal{
		{Name: "rate_limit_error", Limited: true},
		{Name: "overloaded_error"},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			srv := providertest.NewGoogleCloud(t, providertest.Step{Raw: providertest.AnthropicErrorEvent(tc.Name)})
			providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				hermetic(t)
				_, client := providertest.Tap(t, srv)
				p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1, Limiter: lim},
					Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: staticToken("")})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, providertest.SampleRequest(), tc)
		})
	}
}
