package awsprofile

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/google/go-cmp/cmp"
)

// envFromSDK is the SDK's EnvConfig in this package's terms.
func envFromSDK(c config.EnvConfig) Env {
	return Env{
		Credentials:                      c.Credentials,
		ContainerCredentialsEndpoint:     c.ContainerCredentialsEndpoint,
		ContainerCredentialsRelativePath: c.ContainerCredentialsRelativePath,
		ContainerAuthorizationToken:      c.ContainerAuthorizationToken,
		Region:                           c.Region,
		SharedConfigProfile:              c.SharedConfigProfile,
		SharedCredentialsFile:            c.SharedCredentialsFile,
		SharedConfigFile:                 c.SharedConfigFile,
		CustomCABundle:                   c.CustomCABundle,
		WebIdentityTokenFilePath:         c.WebIdentityTokenFilePath,
		RoleARN:                          c.RoleARN,
		RoleSessionName:                  c.RoleSessionName,
		EC2IMDSClientEnableState:         c.EC2IMDSClientEnableState,
		EC2IMDSEndpointMode:              c.EC2IMDSEndpointMode,
		EC2IMDSEndpoint:                  c.EC2IMDSEndpoint,
		EC2IMDSv1Disabled:                c.EC2IMDSv1Disabled,
		UseDualStackEndpoint:             c.UseDualStackEndpoint,
		UseFIPSEndpoint:                  c.UseFIPSEndpoint,
		RetryMaxAttempts:                 c.RetryMaxAttempts,
		RetryMode:                        c.RetryMode,
		IgnoreConfiguredEndpoints:        c.IgnoreConfiguredEndpoints,
		BaseEndpoint:                     c.BaseEndpoint,
		AuthSchemePreference:             c.AuthSchemePreference,
	}
}

var envCases = []struct {
	name    string
	env     map[string]string
	wantErr bool // documents the case; the SDK decides
}{
	{name: "nothing set"},
	{name: "keys with session token and account", env: map[string]string{
		"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": secretA, "AWS_SESSION_TOKEN": "T", "AWS_ACCOUNT_ID": "123"}},
	{name: "the older key names", env: map[string]string{"AWS_ACCESS_KEY": "AK", "AWS_SECRET_KEY": secretA}},
	{name: "the newer key names win", env: map[string]string{
		"AWS_ACCESS_KEY_ID": "AK1", "AWS_ACCESS_KEY": "AK2", "AWS_SECRET_ACCESS_KEY": secretA, "AWS_SECRET_KEY": secretB}},
	{name: "an access key without secret is no credentials", env: map[string]string{
		"AWS_ACCESS_KEY_ID": "AK", "AWS_SESSION_TOKEN": "T", "AWS_ACCOUNT_ID": "1"}},
	{name: "container credentials", env: map[string]string{
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:1/c", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/c",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok"}},
	{name: "AWS_REGION before AWS_DEFAULT_REGION", env: map[string]string{"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-1"}},
	{name: "AWS_DEFAULT_REGION alone", env: map[string]string{"AWS_DEFAULT_REGION": "us-east-1"}},
	{name: "AWS_PROFILE before AWS_DEFAULT_PROFILE", env: map[string]string{"AWS_PROFILE": "a", "AWS_DEFAULT_PROFILE": "b"}},
	{name: "AWS_DEFAULT_PROFILE alone", env: map[string]string{"AWS_DEFAULT_PROFILE": "b"}},
	{name: "files, CA bundle, web identity", env: map[string]string{
		"AWS_SHARED_CREDENTIALS_FILE": "/c", "AWS_CONFIG_FILE": "/f", "AWS_CA_BUNDLE": "/ca",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn:r", "AWS_ROLE_SESSION_NAME": "s"}},
	{name: "IMDS disabled, any case", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "TRUE"}},
	{name: "IMDS enabled explicitly", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "false"}},
	{name: "IMDS disabled neither true nor false is ignored", env: map[string]string{"AWS_EC2_METADATA_DISABLED": "yes"}},
	{name: "IMDS endpoint, mode and v1", env: map[string]string{
		"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://[::1]:1", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE": "ipv6",
		"AWS_EC2_METADATA_V1_DISABLED": "True"}},
	{name: "a blank IMDS endpoint mode is unset", env: map[string]string{"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE": "  "}},
	{name: "a bad IMDS endpoint mode", wantErr: true, env: map[string]string{"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE": "IPv5"}},
	{name: "a bad AWS_EC2_METADATA_V1_DISABLED", wantErr: true, env: map[string]string{"AWS_EC2_METADATA_V1_DISABLED": "1"}},
	{name: "dual-stack on, FIPS off", env: map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "true", "AWS_USE_FIPS_ENDPOINT": "FALSE"}},
	{name: "a bad AWS_USE_DUALSTACK_ENDPOINT", wantErr: true, env: map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "yes"}},
	{name: "a bad AWS_USE_FIPS_ENDPOINT", wantErr: true, env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "on"}},
	{name: "max attempts and retry mode", env: map[string]string{"AWS_MAX_ATTEMPTS": "5", "AWS_RETRY_MODE": "standard"}},
	{name: "max attempts is decimal only", wantErr: true, env: map[string]string{"AWS_MAX_ATTEMPTS": "0x5"}},
	{name: "max attempts not a number", wantErr: true, env: map[string]string{"AWS_MAX_ATTEMPTS": "five"}},
	{name: "retry mode is case-sensitive", wantErr: true, env: map[string]string{"AWS_RETRY_MODE": "Adaptive"}},
	{name: "endpoints: base and ignore", env: map[string]string{"AWS_ENDPOINT_URL": "http://e", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}},
	{name: "a bad AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", wantErr: true, env: map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "y"}},
	{name: "auth scheme preference", env: map[string]string{"AWS_AUTH_SCHEME_PREFERENCE": " httpBearerAuth ,sigv4,, "}},
	{name: "auth scheme preference of commas", env: map[string]string{"AWS_AUTH_SCHEME_PREFERENCE": ","}},
	{name: "variables Env does not keep, good values", env: map[string]string{
		"AWS_DEFAULTS_MODE": "In-Region", "AWS_S3_USE_ARN_REGION": "true", "AWS_ENABLE_ENDPOINT_DISCOVERY": "AUTO",
		"AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES": "10485760", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "required",
		"AWS_REQUEST_CHECKSUM_CALCULATION": "When_Required", "AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_SUPPORTED",
		"AWS_RESTRICT_FILE_PERMISSIONS": "Unrestricted", "AWS_DISABLE_REQUEST_COMPRESSION": "False",
		"AWS_DISABLE_CLOCK_SKEW_CORRECTION": "true", "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS": "false",
		"AWS_S3_DISABLE_EXPRESS_SESSION_AUTH": "TRUE"}},
	{name: "a bad AWS_DEFAULTS_MODE", wantErr: true, env: map[string]string{"AWS_DEFAULTS_MODE": "fast"}},
	{name: "a bad AWS_S3_USE_ARN_REGION", wantErr: true, env: map[string]string{"AWS_S3_USE_ARN_REGION": "1"}},
	{name: "a bad AWS_ENABLE_ENDPOINT_DISCOVERY", wantErr: true, env: map[string]string{"AWS_ENABLE_ENDPOINT_DISCOVERY": "sometimes"}},
	{name: "AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES below range", wantErr: true, env: map[string]string{"AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES": "-1"}},
	{name: "AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES not a number", wantErr: true, env: map[string]string{"AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES": "1k"}},
	{name: "AWS_ACCOUNT_ID_ENDPOINT_MODE is case-sensitive", wantErr: true, env: map[string]string{"AWS_ACCOUNT_ID_ENDPOINT_MODE": "Required"}},
	{name: "a bad AWS_REQUEST_CHECKSUM_CALCULATION", wantErr: true, env: map[string]string{"AWS_REQUEST_CHECKSUM_CALCULATION": "always"}},
	{name: "a bad AWS_RESPONSE_CHECKSUM_VALIDATION", wantErr: true, env: map[string]string{"AWS_RESPONSE_CHECKSUM_VALIDATION": "never"}},
	{name: "a bad AWS_RESTRICT_FILE_PERMISSIONS", wantErr: true, env: map[string]string{"AWS_RESTRICT_FILE_PERMISSIONS": "0600"}},
	{name: "a bad AWS_DISABLE_REQUEST_COMPRESSION", wantErr: true, env: map[string]string{"AWS_DISABLE_REQUEST_COMPRESSION": "no"}},
	{name: "a bad AWS_DISABLE_CLOCK_SKEW_CORRECTION", wantErr: true, env: map[string]string{"AWS_DISABLE_CLOCK_SKEW_CORRECTION": "1"}},
	{name: "a bad AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS", wantErr: true, env: map[string]string{"AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS": "x"}},
	{name: "a bad AWS_S3_DISABLE_EXPRESS_SESSION_AUTH", wantErr: true, env: map[string]string{"AWS_S3_DISABLE_EXPRESS_SESSION_AUTH": "x"}},
	{name: "a bad value with keys set names no secret", wantErr: true, env: map[string]string{
		"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": secretA, "AWS_SESSION_TOKEN": "SECRETtoken", "AWS_MAX_ATTEMPTS": "x"}},
}

// TestNewEnvMatchesTheSDK runs the SDK's config.NewEnvConfig and NewEnv in
// the same environment and compares every field of Env, or that both fail.
func TestNewEnvMatchesTheSDK(t *testing.T) {
	for _, tc := range envCases {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			sdk, sdkErr := config.NewEnvConfig()
			got, err := NewEnv()
			if (sdkErr != nil) != (err != nil) {
				t.Fatalf("error: SDK %v, ours %v", sdkErr, err)
			}
			if (sdkErr != nil) != tc.wantErr {
				t.Errorf("case says wantErr=%v but the SDK's error is %v", tc.wantErr, sdkErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error shows a secret: %v", err)
				}
				return
			}
			if diff := cmp.Diff(envFromSDK(sdk), got); diff != "" {
				t.Errorf("Env differs from the SDK's (-SDK +ours):\n%s", diff)
			}
		})
	}
}
