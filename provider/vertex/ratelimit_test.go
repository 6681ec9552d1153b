package vertex

import (
	"testing"

	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// The rate limiter's key of a request on Vertex is the regional host,
// "gcp:PROJECT/REGION" (docs/ratelimits.md) and the model, streamed and
// whole; it holds no token.
func TestTheRateLimitKeyNamesTheProjectAndRegion(t *testing.T) {
	req := providertest.SampleRequest()
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewVertex(t)
		srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
		keys := ratewaittest.KeysOf(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
			_, client := providertest.Tap(t, srv)
			p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: -1, Limiter: lim},
				Region: "us-east5", Project: "test-project", Credentials: staticToken("")})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, req)
		ratewaittest.CheckKeys(t, keys, ratelimit.Key{Endpoint: "us-east5-aiplatform.googleapis.com", Identity: "gcp:test-project/us-east5", Model: req.Model}, "ya29.test")
	}
}
