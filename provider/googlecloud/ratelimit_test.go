package googlecloud

import (
	"testing"

	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// The rate limiter's key of a request on the gateway is its host,
// "gcp:PROJECT/LOCATION/WORKSPACE" (docs/ratelimits.md) and the model,
// streamed and whole; it holds no token. With a base URL and no project
// or workspace set, the account is the URL's path, which names them.
func TestTheRateLimitKeyNamesTheProjectLocationAndWorkspace(t *testing.T) {
	req := providertest.SampleRequest()
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewGoogleCloud(t)
		srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
		keys := ratewaittest.KeysOf(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
			hermetic(t)
			_, client := providertest.Tap(t, srv)
			p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: -1, Limiter: lim},
				Project: "test-project", WorkspaceID: "wrkspc_test", Credentials: staticToken("")})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, req)
		ratewaittest.CheckKeys(t, keys, ratelimit.Key{Endpoint: "claude.googleapis.com", Identity: "gcp:test-project/global/wrkspc_test", Model: req.Model}, "ya29.test")
	}
	if got, want := identity("", "global", "", "https://proxy.example/v1/projects/p/locations/global/workspaces/w/invoke/"), "gcp:/v1/projects/p/locations/global/workspaces/w/invoke/"; got != want {
		t.Errorf("with a base URL alone the identity is %q, want %q", got, want)
	}
}
