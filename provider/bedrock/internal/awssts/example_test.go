package awssts_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsendpoint"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awssts"
)

// The chain's use: the STS endpoint for the config's region and
// settings, a provider assuming a profile's role_arn with the source
// profile's credentials, cached as LoadDefaultConfig caches it.
func ExampleNewAssumeRole() {
	endpoint, signingRegion, err := awsendpoint.Resolve(awsendpoint.STS, awsendpoint.Params{Region: "eu-west-1"})
	if err != nil {
		// The SDK fails at Retrieve, not at load: the chain gives a
		// provider that returns this error.
		return
	}
	source := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
	})
	creds := aws.NewCredentialsCache(awssts.NewAssumeRole(
		awssts.Client{Client: awscall.Client{HTTPClient: http.DefaultClient, Endpoint: endpoint}, SigningRegion: signingRegion},
		source,
		awssts.AssumeRoleOptions{RoleARN: "arn:aws:iam::123456789012:role/demo", ExternalID: "ext"},
	))
	fmt.Println(endpoint, signingRegion, creds != nil)
	// Output: https://sts.eu-west-1.amazonaws.com eu-west-1 true
}
