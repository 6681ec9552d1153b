package bedrock

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// A throttlingException or serviceUnavailableException frame inside an
// event stream that had answered 200 is told to the rate limiter as the
// 429 ThrottlingException or 503 ServiceUnavailableException it stands
// for.
func TestAnExceptionInsideTheStreamIsToldToTheLimiter(t *testing.T) {
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	for _, tc := range []providertest.StreamRefusal{
		{Name: "throttlingException", Limited: true},
		{Name: "serviceUnavailableException"},
		{Name: "modelNotReadyException"},
		{Name: "internalServerException"},
	} {
		t.Run(tc.Name, func(t *testing.T) {
			srv := providertest.NewBedrock(t, providertest.Step{Raw: string(providertest.BedrockException(tc.Name, "Too many tokens, please wait before trying again."))})
			providertest.CheckStreamRefusal(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
				_, client := providertest.Tap(t, srv)
				p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1, Limiter: lim},
					AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}, providertest.SampleRequest(), tc)
		})
	}
}
