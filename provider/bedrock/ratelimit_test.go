package bedrock

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/internal/ratewait/ratewaittest"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/ratelimit"
)

// The rate limiter's key of a request on Bedrock is the regional host,
// the account as docs/ratelimits.md names it, and the model, streamed
// and whole; it holds no key, secret or token.
func TestTheRateLimitKeyNamesTheRegionAndTheAccount(t *testing.T) {
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "")
	req := providertest.SampleRequest()
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t)
		srv.Respond = func(providertest.Request) providertest.Step { return providertest.Step{Text: "ok"} }
		keys := ratewaittest.KeysOf(t, func(t *testing.T, lim *ratelimit.Limiter) provider.Provider {
			_, client := providertest.Tap(t, srv)
			p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: -1, Limiter: lim},
				AWS: &aws.Config{Region: "us-east-1", Credentials: staticKeys}})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, req)
		ratewaittest.CheckKeys(t, keys, ratelimit.Key{Endpoint: "bedrock-runtime.us-east-1.amazonaws.com", Identity: "aws:us-east-1/default", Model: req.Model},
			"AKIDTEST", "secret")
	}
}

// The account is named by what authorizes the requests, as
// docs/ratelimits.md says, and never by a secret: the bearer token's
// hash, the static access key's id's hash, the profile, else "default".
func TestTheAccountIsNamedWithoutASecret(t *testing.T) {
	for _, tc := range []struct {
		name         string
		bearer, akid string
		profile      string
		loaded       bool
		want         string
	}{
		{name: "a bearer token", bearer: "bedrock-api-key-secret", akid: "AKIDENV", loaded: true, want: "aws:eu-west-1/" + ratelimit.Identity("bedrock-api-key-secret")},
		{name: "an access key from the environment", akid: "AKIDENV", profile: "work", loaded: true, want: "aws:eu-west-1/" + ratelimit.Identity("AKIDENV")},
		{name: "a profile", profile: "work", loaded: true, want: "aws:eu-west-1/profile:work"},
		{name: "the default chain", loaded: true, want: "aws:eu-west-1/default"},
		{name: "a configuration given whole", akid: "AKIDENV", profile: "work", want: "aws:eu-west-1/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_BEARER_TOKEN_BEDROCK", tc.bearer)
			t.Setenv("AWS_ACCESS_KEY_ID", tc.akid)
			t.Setenv("AWS_SECRET_ACCESS_KEY", "the-secret-access-key")
			t.Setenv("AWS_SESSION_TOKEN", "the-session-token")
			t.Setenv("AWS_PROFILE", tc.profile)
			got := identity("eu-west-1", tc.loaded)
			if got != tc.want {
				t.Errorf("identity is %q, want %q", got, tc.want)
			}
			for _, s := range []string{"bedrock-api-key-secret", "AKIDENV", "the-secret-access-key", "the-session-token"} {
				if strings.Contains(got, s) {
					t.Errorf("identity %q holds %q", got, s)
				}
			}
		})
	}
}
