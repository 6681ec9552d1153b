package anthropic

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// With a limiter, a 429's retry-after holds the next request of the key
// back — streamed (internal/send's gate) and whole (the SDK's call,
// through the gate's middleware) alike — under the key of the host, the
// API key's identity and the model, which holds no key.
func TestARetryAfterHoldsTheNextRequestAtTheLimiter(t *testing.T) {
	const key = "sk-ant-secret-key"
	for _, noStream := range []bool{false, true} {
		t.Run(map[bool]string{false: "streamed", true: "whole"}[noStream], func(t *testing.T) {
			clock := ratewaittest.NewClock(ratewaittest.Start)
			const wait = 20 * time.Second
			srv := providertest.NewLimited(t, providertest.Limits{Rate: 1, Window: wait, RetryAfter: wait, Now: clock.Now})
			srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
			// another client of the key spends its one request first: the
			// wire's first is refused 429, retry after 20s
			prime(t, srv.URL, key)
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
				Arrivals: func() []time.Time {
					var at []time.Time
					for _, s := range srv.Log()[1:] {
						at = append(at, s.At)
					}
					return at
				},
				RetryAfter: wait,
				Key:        ratelimit.Key{Endpoint: u.Host, Identity: ratelimit.Identity(key), Model: req.Model},
				Secrets:    []string{key},
				Request:    req,
			})
			if early := srv.Log().Early(); len(early) != 0 {
				t.Errorf("requests came before their key's retry-after: %+v", early)
			}
		})
	}
}

// prime sends one request of key to the fake at base, outside the wire.
func prime(t *testing.T, base, key string) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("x-api-key", key)
	r.Header.Set("content-type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("priming the fake: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("priming the fake: %s", res.Status)
	}
}
