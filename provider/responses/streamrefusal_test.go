package responses

import (
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// An error event or a failed response inside a stream that had answered
// 200 — a rate_limit_exceeded, a server_error — is told to the rate
// limiter as the 429 or 500 it stands for; so is a failed response
// answered whole with 200.
func TestAnErrorEventInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
	for _, tc := range []struct {
		name     string
		refusal  providertest.StreamRefusal
		event    string
		noStream bool
	}{
		{"an error event", providertest.StreamRefusal{Name: "rate_limit_exceeded", Limited: true},
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"rate_limit_exceeded\",\"message\":\"" + providertest.QuotedKey + "\",\"param\":null}\n\n", false},
		{"an error event with its error object", providertest.StreamRefusal{Name: "rate_limit_exceeded", Limited: true},
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"error\":{\"type\":\"requests\",\"code\":\"rate_limit_exceeded\",\"message\":\"" + providertest.QuotedKey + "\",\"param\":null}}\n\n", false},
		{"an error event for an overload", providertest.StreamRefusal{Name: "server_is_overloaded"},
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"server_is_overloaded\",\"message\":\"" + providertest.QuotedKey + "\",\"param\":null}\n\n", false},
		{"a failed response", providertest.StreamRefusal{Name: "rate_limit_exceeded", Limited: true},
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"" + providertest.QuotedKey + "\"},\"output\":[]}}\n\n", false},
		{"a failed response for a fault", providertest.StreamRefusal{Name: "server_error"},
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"" + providertest.QuotedKey + "\"},\"output\":[]}}\n\n", false},
		{"a failed response answered whole", providertest.StreamRefusal{Name: "rate_limit_exceeded", Limited: true},
			"{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"" + providertest.QuotedKey + "\"},\"output\":[]}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := created + tc.event
			if tc.noStream {
				raw = tc.event
			}
			srv := providertest.NewResponses(t, providertest.Step{Raw: raw})
			providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				p, err := New(Config{APIKey: "k", BaseURL: srv.URL, MaxRetries: -1, Limiter: lim, NoStream: tc.noStream})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, providertest.SampleRequest(), tc.refusal)
		})
	}
}
