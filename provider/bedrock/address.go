package bedrock

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awsendpoint"
)

// sdkID is Bedrock Runtime's service ID in the AWS SDK: the name its
// configured endpoint goes by (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, the
// services section's bedrock_runtime).
const sdkID = "Bedrock Runtime"

// address is where the AWS SDK's bedrockruntime client made from cfg
// (NewFromConfig) sends, and the region it signs for: cfg's configured
// endpoint (cfg.BaseEndpoint, AWS_ENDPOINT_URL's or endpoint_url's, unless
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME or the services section's
// bedrock_runtime endpoint_url replaces it; none when configured
// endpoints are ignored), else Bedrock Runtime's endpoint in cfg's region
// with FIPS and dual-stack as cfg's ConfigSources say (internal/
// awsendpoint's rules: the partition's suffix, -fips, the dual-stack
// suffix). It reads what the client reads and no more: cfg and those two
// variables. Its errors say what is wrong (a region that is not one, FIPS
// or dual-stack where the partition or a configured endpoint rules them
// out, a configured endpoint that is no URL or empty) and never show the
// endpoint's secrets.
func address(cfg aws.Config) (endpoint, signingRegion string, err error) {
	base := cfg.BaseEndpoint
	_, general := os.LookupEnv("AWS_ENDPOINT_URL")
	_, own := os.LookupEnv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
	if !general || own {
		// The client's order: the service's own endpoint replaces the
		// configuration's, unless only AWS_ENDPOINT_URL is set.
		if v, found := serviceBaseEndpoint(cfg.ConfigSources); found {
			base = &v
		}
	}
	p := awsendpoint.Params{Region: cfg.Region}
	for _, src := range cfg.ConfigSources {
		if s, ok := src.(interface {
			GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error)
		}); ok {
			if v, found, err := s.GetUseFIPSEndpoint(context.Background()); err != nil || found {
				p.UseFIPS = err == nil && v == aws.FIPSEndpointStateEnabled
				break
			}
		}
	}
	for _, src := range cfg.ConfigSources {
		if s, ok := src.(interface {
			GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error)
		}); ok {
			if v, found, err := s.GetUseDualStackEndpoint(context.Background()); err != nil || found {
				p.UseDualStack = err == nil && v == aws.DualStackEndpointStateEnabled
				break
			}
		}
	}
	if base != nil {
		if *base == "" {
			// The SDK's client takes it and sends nowhere; the public
			// endpoint would be a surprise for whoever configured one.
			return "", "", errors.New("bedrock: the configured endpoint of Bedrock Runtime is empty (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL, or an endpoint_url in the AWS profile)")
		}
		p.Endpoint = *base
	}
	endpoint, signingRegion, err = awsendpoint.Resolve(awsendpoint.BedrockRuntime, p)
	if err != nil {
		return "", "", fmt.Errorf("bedrock: the address of Bedrock in region %q: %w", cfg.Region, err)
	}
	return endpoint, signingRegion, nil
}

// serviceBaseEndpoint is Bedrock Runtime's own configured endpoint as
// the SDK's client asks cfg's ConfigSources for it: none when a source
// says configured endpoints are ignored, else the first source's that
// has one (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, then the profile's services
// section).
func serviceBaseEndpoint(sources []any) (string, bool) {
	for _, src := range sources {
		if s, ok := src.(interface {
			GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error)
		}); ok {
			v, found, err := s.GetIgnoreConfiguredEndpoints(context.Background())
			if found && v {
				return "", false
			}
			if err != nil || found {
				break
			}
		}
	}
	for _, src := range sources {
		if s, ok := src.(interface {
			GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
		}); ok {
			v, found, err := s.GetServiceBaseEndpoint(context.Background(), sdkID)
			if err != nil {
				return "", false
			}
			if found {
				return v, true
			}
		}
	}
	return "", false
}
