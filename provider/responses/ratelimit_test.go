package responses

import (
	"net/url"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// With a limiter, a 429's retry-after (the fake's retry-after-ms: 5)
// holds the next request of the key back — streamed (internal/send's
// gate) and whole (the Whole Sender's, the same gate) alike
// — under the key of the host, the API key's identity and the model,
// which holds no key.
func TestARetryAfterHoldsTheNextRequestAtTheLimiter(t *testing.T) {
	const key = "sk-proj-secret-key"
	for _, noStream := range []bool{false, true} {
		t.Run(map[bool]string{false: "streamed", true: "whole"}[noStream], func(t *testing.T) {
			clock := ratewaittest.NewClock(ratewaittest.Start)
			srv, arrivals := ratewaittest.RefuseFirst(t, providertest.NewResponses, clock)
			u, _ := url.Parse(srv.URL)
			req := providertest.SampleRequest()
			ratewaittest.Check(t, clock, ratewaittest.Case{
				New: func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
					p, err := New(Config{APIKey: key, BaseURL: srv.URL, MaxRetries: -1, NoStream: noStream, Limiter: lim})
					if err != nil {
						t.Fatal(err)
					}
					return p
				},
				Arrivals:   arrivals,
				RetryAfter: 5 * time.Millisecond,
				Key:        ratelimit.Key{Endpoint: u.Host, Identity: ratelimit.Identity(key), Model: req.Model},
				Secrets:    []string{key},
				Request:    req,
			})
		})
	}
}
