package delegate

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/bedrock"
	"github.com/myelin-run/myelin/provider/gemini"
	"github.com/myelin-run/myelin/provider/googlecloud"
	"github.com/myelin-run/myelin/provider/openai"
	"github.com/myelin-run/myelin/provider/providertest"
	"github.com/myelin-run/myelin/provider/responses"
	"github.com/myelin-run/myelin/provider/vertex"
)

// testWire is one of the seven wires, as the fork tests reach it: its fake
// server, a provider pointed at it, and how its requests hold the
// conversation.
type testWire struct {
	name     string
	server   func(t testing.TB, steps ...providertest.Step) *providertest.Server
	provider func(url string) (provider.Provider, error)
	model    string
	// messages is the request member holding the conversation.
	messages string
	// merges says the wire sends consecutive messages of one role as one
	// (the Anthropic Messages wire and its platforms, Gemini): a prompt
	// after results goes in the results' message.
	merges bool
	// content is the member of a merged message holding its blocks.
	content string
}

// googleToken is a static token: nothing is looked up.
var googleToken = &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})}

var testWires = []testWire{
	{name: "anthropic", server: providertest.NewAnthropic, model: "claude-test", messages: "messages", merges: true, content: "content",
		provider: func(url string) (provider.Provider, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		}},
	{name: "bedrock", server: providertest.NewBedrock, model: "claude-test", messages: "messages", merges: true, content: "content",
		provider: func(url string) (provider.Provider, error) {
			creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
			})
			return bedrock.New(bedrock.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		}},
	{name: "vertex", server: providertest.NewVertex, model: "claude-test", messages: "messages", merges: true, content: "content",
		provider: func(url string) (provider.Provider, error) {
			return vertex.New(vertex.Config{Config: anthropic.Config{BaseURL: url + "/", MaxRetries: -1}, Region: "us-east5", Project: "test-project", Credentials: googleToken})
		}},
	{name: "google-cloud", server: providertest.NewGoogleCloud, model: "claude-test", messages: "messages", merges: true, content: "content",
		provider: func(url string) (provider.Provider, error) {
			return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1}, Credentials: googleToken})
		}},
	{name: "gemini", server: providertest.NewGemini, model: "gemini-3-flash-test", messages: "contents", merges: true, content: "parts",
		provider: func(url string) (provider.Provider, error) {
			return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		}},
	{name: "openai", server: providertest.NewOpenAI, model: "gpt-test", messages: "messages",
		provider: func(url string) (provider.Provider, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		}},
	{name: "openai-responses", server: providertest.NewResponses, model: "gpt-test", messages: "input",
		provider: func(url string) (provider.Provider, error) {
			return responses.New(responses.Config{APIKey: "k", BaseURL: url, MaxRetries: -1})
		}},
}
