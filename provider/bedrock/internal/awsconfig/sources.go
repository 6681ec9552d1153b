package awsconfig

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awsprofile"
)

// envSource is the environment as one of a configuration's
// ConfigSources: it answers what a service client made from the
// configuration (the SDK's bedrockruntime.NewFromConfig, and bedrock,
// which resolves its address as that client would) asks the SDK's
// config.EnvConfig about its endpoint — FIPS, dual-stack, whether
// configured endpoints are ignored, AWS_ENDPOINT_URL_<SERVICE> — with
// the same answers. It must answer nothing else: a client reads only the
// methods it knows.
type envSource struct{ env awsprofile.Env }

// GetUseFIPSEndpoint is AWS_USE_FIPS_ENDPOINT, if set.
func (s envSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	return s.env.UseFIPSEndpoint, s.env.UseFIPSEndpoint != aws.FIPSEndpointStateUnset, nil
}

// GetUseDualStackEndpoint is AWS_USE_DUALSTACK_ENDPOINT, if set.
func (s envSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	return s.env.UseDualStackEndpoint, s.env.UseDualStackEndpoint != aws.DualStackEndpointStateUnset, nil
}

// GetIgnoreConfiguredEndpoints is AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, if
// set.
func (s envSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	if s.env.IgnoreConfiguredEndpoints == nil {
		return false, false, nil
	}
	return *s.env.IgnoreConfiguredEndpoints, true, nil
}

// GetServiceBaseEndpoint is AWS_ENDPOINT_URL_<SERVICE> for the service
// of SDK ID sdkID ("Bedrock Runtime": upper-cased, spaces as
// underscores), read when asked, as the SDK's; an empty one is none.
func (envSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := os.Getenv("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}

// profileSource is the shared files' profile as one of a configuration's
// ConfigSources, answering as the SDK's config.SharedConfig does what
// envSource answers for the environment: use_fips_endpoint,
// use_dualstack_endpoint, ignore_configured_endpoint_urls and the
// services section's endpoint_url.
type profileSource struct{ prof awsprofile.Profile }

// GetUseFIPSEndpoint is the profile's use_fips_endpoint, if set.
func (s profileSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	return s.prof.UseFIPSEndpoint, s.prof.UseFIPSEndpoint != aws.FIPSEndpointStateUnset, nil
}

// GetUseDualStackEndpoint is the profile's use_dualstack_endpoint, if
// set.
func (s profileSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	return s.prof.UseDualStackEndpoint, s.prof.UseDualStackEndpoint != aws.DualStackEndpointStateUnset, nil
}

// GetIgnoreConfiguredEndpoints is the profile's
// ignore_configured_endpoint_urls, if set.
func (s profileSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	if s.prof.IgnoreConfiguredEndpoints == nil {
		return false, false, nil
	}
	return *s.prof.IgnoreConfiguredEndpoints, true, nil
}

// GetServiceBaseEndpoint is the endpoint_url the profile's services
// section gives the service of SDK ID sdkID; an empty one counts, as in
// the SDK.
func (s profileSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, ok := s.prof.Services.EndpointURL(sdkID)
	return v, ok, nil
}

// baseEndpoint is the configuration's BaseEndpoint as the SDK's loader
// sets it: AWS_ENDPOINT_URL, else the profile's endpoint_url, neither
// when configured endpoints are ignored; nil for none.
func (l *loader) baseEndpoint() *string {
	if l.ignoreConfiguredEndpoints() {
		return nil
	}
	for _, v := range []string{l.env.BaseEndpoint, l.prof.BaseEndpoint} {
		if v != "" {
			return aws.String(v)
		}
	}
	return nil
}
