// Package bedrock is Claude on Amazon Bedrock: the Anthropic Messages wire
// (provider/anthropic: its encoder, cache markers and reading of the
// answer) sent through anthropic-sdk-go's own bedrock package, which calls
// InvokeModel (/model/MODEL/invoke) or InvokeModelWithResponseStream
// (/model/MODEL/invoke-with-response-stream) with the model in the URL,
// signs each request with AWS SigV4 (or sends AWS_BEARER_TOKEN_BEDROCK as
// a bearer token); the wire reads Bedrock's binary event stream itself,
// frame by frame, into the API's events (provider/anthropic's
// Platform.EventStream).
//
// The body is the first-party wire's, byte for byte, less "model" and
// "stream" (the SDK moves them into the URL) and with
// "anthropic_version":"bedrock-2023-05-31" at its end, the value the
// Bedrock documentation requires. Prompt caching is the first-party
// wire's cache_control markers, which Bedrock takes for the models that
// support caching. It must not read or send an Anthropic API key.
package bedrock

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	sdkbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/myelin-run/myelin/provider/anthropic"
)

// Version is the anthropic_version sent in the body: the one the Bedrock
// documentation for Claude's Messages API requires.
const Version = "bedrock-2023-05-31"

// Config configures the wire on Bedrock. The zero value loads the AWS
// configuration the usual way: AWS_REGION (or AWS_DEFAULT_REGION),
// AWS_PROFILE, AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN, the shared config and credentials files, SSO, and the
// instance's role; AWS_BEARER_TOKEN_BEDROCK, when set, is sent instead of
// a signature; ANTHROPIC_BEDROCK_BASE_URL, when set, replaces the
// regional address.
type Config struct {
	// Config is the wire's own settings, as on the first-party API: its
	// BaseURL, when set, replaces the address
	// (https://bedrock-runtime.REGION.amazonaws.com, or
	// $ANTHROPIC_BEDROCK_BASE_URL) for a proxy or a test's fake; NoStream
	// calls InvokeModel, the answer then arriving whole; MaxRetries and
	// HTTPClient as there. Its APIKey must stay empty.
	anthropic.Config
	// AWS is the AWS configuration (its Region and Credentials); nil loads
	// the default one, as the AWS CLI does.
	AWS *aws.Config
}

// New returns the wire, or an error that says what is missing (a region)
// or why the AWS configuration could not be loaded. Credentials are
// resolved at the first request, as the AWS SDK does; their absence is
// then that request's error.
func New(cfg Config) (*anthropic.OnPlatform, error) {
	var awsCfg aws.Config
	if cfg.AWS != nil {
		awsCfg = *cfg.AWS
	} else {
		loaded, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			return nil, fmt.Errorf("bedrock: loading the AWS configuration: %v", err)
		}
		awsCfg = loaded
	}
	if awsCfg.Region == "" {
		return nil, errors.New("bedrock: no AWS region: set AWS_REGION (or a region in the AWS profile that AWS_PROFILE names)")
	}
	return anthropic.NewOn(anthropic.Platform{
		Name:    "bedrock",
		Version: Version,
		Options: []option.RequestOption{sdkbedrock.WithConfig(awsCfg)},
		// the wire reads the event stream's frames itself
		EventStream: true,
	}, cfg.Config)
}
