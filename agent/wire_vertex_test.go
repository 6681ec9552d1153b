package agent

import (
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/provider/vertex"
)

func init() {
	testWires["vertex"] = testWire{
		server: providertest.NewVertex,
		provider: func(url string) (provider.Provider, error) {
			// A static token: nothing is looked up.
			creds := &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})}
			return vertex.New(vertex.Config{Config: anthropic.Config{BaseURL: url + "/", MaxRetries: -1}, Region: "us-east5", Project: "test-project", Credentials: creds})
		},
		results: anthropicResults, // the body is the Anthropic wire's
		model:   "claude-test",
	}
}
