package gemini

import (
	"testing"
	"time"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// An error object inside a stream that had answered 200 — a
// RESOURCE_EXHAUSTED with its RetryInfo, an UNAVAILABLE — is told to the
// rate limiter as the 429 or 503 it stands for, its retryDelay
// honoured.
func TestAnErrorObjectInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Reading"}]},"index":0}]}`
	for _, tc := range []struct {
		name    string
		refusal providertest.StreamRefusal
		raw     string
	}{
		{"a rate limit with its retry delay", providertest.StreamRefusal{Name: "RESOURCE_EXHAUSTED", Limited: true, RetryAfter: 20 * time.Second},
			"data: " + first + "\r\n\r\ndata: " + `{"error":{"code":429,"message":"` + providertest.QuotedKey + `","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}` + "\r\n\r\n"},
		{"the model overloaded", providertest.StreamRefusal{Name: "UNAVAILABLE"},
			"data: " + first + "\r\n\r\ndata: " + `{"error":{"code":503,"message":"` + providertest.QuotedKey + `","status":"UNAVAILABLE"}}` + "\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewGemini(t, providertest.Step{Raw: tc.raw})
			providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				return newWire(t, srv, Config{Limiter: lim})
			}, providertest.SampleRequest(), tc.refusal)
		})
	}
}
