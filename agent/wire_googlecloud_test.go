package agent

import (
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/googlecloud"
	"github.com/myelin-run/myelin/provider/providertest"
)

func init() {
	testWires["google-cloud"] = testWire{
		server: providertest.NewGoogleCloud,
		provider: func(url string) (provider.Provider, error) {
			// A static token: nothing is looked up. The fake's URL is the
			// gateway's base URL, project and workspace in it.
			creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})}
			return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1}, Credentials: creds})
		},
		results: anthropicResults, // the body is the Anthropic wire's
		model:   "claude-test",
	}
}
