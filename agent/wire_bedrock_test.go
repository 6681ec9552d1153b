package agent

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/bedrock"
	"github.com/myelin-run/myelin/provider/providertest"
)

func init() {
	testWires["bedrock"] = testWire{
		server: providertest.NewBedrock,
		provider: func(url string) (provider.Provider, error) {
			// Static keys: SigV4 signs with them, nothing is looked up.
			creds := aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
			})
			return bedrock.New(bedrock.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		},
		results: anthropicResults, // the body is the Anthropic wire's
		model:   "claude-test",
	}
}
