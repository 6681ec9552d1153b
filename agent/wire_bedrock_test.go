package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/bedrock"
	"github.com/myelin-run/myelin/provider/providertest"
)

// bedrockKeys are the static keys the tests sign with: nothing is looked up.
var bedrockKeys = aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}

func init() {
	signer := v4.NewSigner()
	testWires["bedrock"] = testWire{
		server: providertest.NewBedrock,
		provider: func(url string) (provider.Provider, error) {
			creds := aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) { return bedrockKeys, nil })
			return bedrock.New(bedrock.Config{Config: anthropic.Config{BaseURL: url, MaxRetries: -1}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		},
		results: anthropicResults, // the body is the Anthropic wire's
		model:   "claude-test",
		// A Bedrock client signs every request: the body's SHA-256 and
		// SigV4 over the request, as the SDK's signer does it.
		sign: func(r *http.Request, body []byte) error {
			sum := sha256.Sum256(body)
			return signer.SignHTTP(r.Context(), bedrockKeys, r, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now())
		},
	}
}
