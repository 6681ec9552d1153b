package providertest_test

import (
	"context"
	"errors"
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

// everyWire is each of the seven wires, with the fake that speaks it:
// new makes the wire for the fake at url, streaming or not, never
// retrying; firstText is how many events of the fake's stream go up to
// the first piece of an answer's text, that one included.
var everyWire = []struct {
	name      string
	server    func(t testing.TB, steps ...providertest.Step) *providertest.Server
	firstText int
	new       func(url string, noStream bool) (provider.Provider, error)
}{
	{"anthropic", providertest.NewAnthropic, 3, func(url string, noStream bool) (provider.Provider, error) {
		return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: noStream})
	}},
	{"bedrock", providertest.NewBedrock, 3, func(url string, noStream bool) (provider.Provider, error) {
		keys := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
		})
		return bedrock.New(bedrock.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1, NoStream: noStream}, AWS: &aws.Config{Region: "us-east-1", Credentials: keys}})
	}},
	{"vertex", providertest.NewVertex, 3, func(url string, noStream bool) (provider.Provider, error) {
		return vertex.New(vertex.Config{Config: anthropic.Config{BaseURL: url + "/", MaxRetries: -1, NoStream: noStream}, Region: "us-east5", Project: "test-project", Credentials: staticToken()})
	}},
	{"google-cloud", providertest.NewGoogleCloud, 3, func(url string, noStream bool) (provider.Provider, error) {
		return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1, NoStream: noStream}, Credentials: staticToken()})
	}},
	{"openai", providertest.NewOpenAI, 2, func(url string, noStream bool) (provider.Provider, error) {
		return openai.New(openai.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: noStream})
	}},
	{"openai-responses", providertest.NewResponses, 5, func(url string, noStream bool) (provider.Provider, error) {
		return responses.New(responses.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: noStream})
	}},
	{"gemini", providertest.NewGemini, 1, func(url string, noStream bool) (provider.Provider, error) {
		return gemini.New(gemini.Config{APIKey: "k", BaseURL: url, MaxRetries: -1, NoStream: noStream})
	}},
}

// staticToken is Google credentials that need no lookup.
func staticToken() *google.Credentials {
	return &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.test", TokenType: "Bearer"})}
}

// A request whose context is cancelled — before it is sent, while the
// provider has not answered yet, or (streamed) after the answer's first
// text came — fails on every wire, streamed or whole, with an error that
// is context.Canceled to errors.Is: the agent and an embedder tell a
// cancel from a provider's failure by it.
func TestACancelledRequestIsContextCanceledOnEveryWire(t *testing.T) {
	const (
		before    = "before sending"
		waiting   = "while waiting for the answer"
		midStream = "mid-stream"
	)
	for _, w := range everyWire {
		for _, noStream := range []bool{false, true} {
			for _, when := range []string{before, waiting, midStream} {
				if noStream && when == midStream {
					continue
				}
				form := "streamed"
				if noStream {
					form = "whole"
				}
				t.Run(w.name+"/"+form+"/"+when, func(t *testing.T) {
					srv := w.server(t)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					held := make(chan struct{})
					t.Cleanup(func() { close(held) }) // before the server closes (cleanups run last first)
					srv.Respond = func(providertest.Request) providertest.Step {
						if when == midStream { // the first text, then nothing: onText cancels
							return providertest.Step{Text: "one two three four five six", CutAfter: w.firstText, Stall: held}
						}
						cancel() // the request has reached the provider
						return providertest.Step{Text: "too late", Hold: held}
					}
					if when == before {
						cancel()
					}
					p, err := w.new(srv.URL, noStream)
					if err != nil {
						t.Fatal(err)
					}
					streamed := false
					_, err = p.Complete(ctx, providertest.SampleRequest(), func(string) { streamed = true; cancel() })
					if when == midStream && !streamed {
						t.Errorf("no text streamed before the stall: the cut is too early for this wire's stream")
					}
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("Complete's error is not context.Canceled to errors.Is: %v (%T)", err, err)
					}
				})
			}
		}
	}
}
