package awsprofile

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Env is what the AWS environment variables say: the subset of the SDK's
// config.EnvConfig that the credential chain reads, with the same names,
// types and meaning. A zero field is a variable unset or empty.
type Env struct {
	// Credentials: AWS_ACCESS_KEY_ID (or AWS_ACCESS_KEY) and
	// AWS_SECRET_ACCESS_KEY (or AWS_SECRET_KEY), with AWS_SESSION_TOKEN and
	// AWS_ACCOUNT_ID; set only when both keys are, Source
	// "EnvConfigCredentials" as the SDK's.
	Credentials                      aws.Credentials
	ContainerCredentialsEndpoint     string                     // AWS_CONTAINER_CREDENTIALS_FULL_URI
	ContainerCredentialsRelativePath string                     // AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
	ContainerAuthorizationToken      string                     // AWS_CONTAINER_AUTHORIZATION_TOKEN
	Region                           string                     // AWS_REGION, else AWS_DEFAULT_REGION
	SharedConfigProfile              string                     // AWS_PROFILE, else AWS_DEFAULT_PROFILE
	SharedCredentialsFile            string                     // AWS_SHARED_CREDENTIALS_FILE
	SharedConfigFile                 string                     // AWS_CONFIG_FILE
	CustomCABundle                   string                     // AWS_CA_BUNDLE
	WebIdentityTokenFilePath         string                     // AWS_WEB_IDENTITY_TOKEN_FILE
	RoleARN                          string                     // AWS_ROLE_ARN
	RoleSessionName                  string                     // AWS_ROLE_SESSION_NAME
	EC2IMDSClientEnableState         imds.ClientEnableState     // AWS_EC2_METADATA_DISABLED (true = disabled; other values ignored)
	EC2IMDSEndpointMode              imds.EndpointModeState     // AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE
	EC2IMDSEndpoint                  string                     // AWS_EC2_METADATA_SERVICE_ENDPOINT
	EC2IMDSv1Disabled                *bool                      // AWS_EC2_METADATA_V1_DISABLED
	UseDualStackEndpoint             aws.DualStackEndpointState // AWS_USE_DUALSTACK_ENDPOINT
	UseFIPSEndpoint                  aws.FIPSEndpointState      // AWS_USE_FIPS_ENDPOINT
	RetryMaxAttempts                 int                        // AWS_MAX_ATTEMPTS
	RetryMode                        aws.RetryMode              // AWS_RETRY_MODE
	IgnoreConfiguredEndpoints        *bool                      // AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
	BaseEndpoint                     string                     // AWS_ENDPOINT_URL
	AuthSchemePreference             []string                   // AWS_AUTH_SCHEME_PREFERENCE, split on commas
}

// NewEnv reads the environment as the SDK's config.NewEnvConfig does, and
// fails where it fails: a boolean variable not true or false, an integer
// not an integer, an unknown mode, including variables Env does not keep
// (AWS_DEFAULTS_MODE, AWS_S3_USE_ARN_REGION, ...), so that an environment
// the SDK refuses is refused here too. The error names the variable and its
// value, never a credential.
func NewEnv() (Env, error) {
	var e Env
	if id, secret := firstEnv("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"), firstEnv("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"); id != "" && secret != "" {
		e.Credentials = aws.Credentials{
			AccessKeyID:     id,
			SecretAccessKey: secret,
			SessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
			Source:          "EnvConfigCredentials",
			AccountID:       os.Getenv("AWS_ACCOUNT_ID"),
		}
	}
	e.ContainerCredentialsEndpoint = os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	e.ContainerCredentialsRelativePath = os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
	e.ContainerAuthorizationToken = os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
	e.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	e.SharedConfigProfile = firstEnv("AWS_PROFILE", "AWS_DEFAULT_PROFILE")
	e.SharedCredentialsFile = os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	e.SharedConfigFile = os.Getenv("AWS_CONFIG_FILE")
	e.CustomCABundle = os.Getenv("AWS_CA_BUNDLE")
	e.WebIdentityTokenFilePath = os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE")
	e.RoleARN = os.Getenv("AWS_ROLE_ARN")
	e.RoleSessionName = os.Getenv("AWS_ROLE_SESSION_NAME")
	switch v := os.Getenv("AWS_EC2_METADATA_DISABLED"); {
	case strings.EqualFold(v, "true"):
		e.EC2IMDSClientEnableState = imds.ClientDisabled
	case strings.EqualFold(v, "false"):
		e.EC2IMDSClientEnableState = imds.ClientEnabled
	}
	if v := os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"); v != "" {
		if err := e.EC2IMDSEndpointMode.SetFromString(v); err != nil {
			return e, fmt.Errorf("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=%s: %w", v, err)
		}
	}
	e.EC2IMDSEndpoint = os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT")
	var err error
	if e.EC2IMDSv1Disabled, err = envBool("AWS_EC2_METADATA_V1_DISABLED"); err != nil {
		return e, err
	}
	dual, err := envBool("AWS_USE_DUALSTACK_ENDPOINT")
	if err != nil {
		return e, err
	}
	if dual != nil {
		e.UseDualStackEndpoint = aws.DualStackEndpointStateDisabled
		if *dual {
			e.UseDualStackEndpoint = aws.DualStackEndpointStateEnabled
		}
	}
	fips, err := envBool("AWS_USE_FIPS_ENDPOINT")
	if err != nil {
		return e, err
	}
	if fips != nil {
		e.UseFIPSEndpoint = aws.FIPSEndpointStateDisabled
		if *fips {
			e.UseFIPSEndpoint = aws.FIPSEndpointStateEnabled
		}
	}
	if v := os.Getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return e, fmt.Errorf("AWS_MAX_ATTEMPTS=%s: %w", v, err)
		}
		e.RetryMaxAttempts = int(n)
	}
	if v := os.Getenv("AWS_RETRY_MODE"); v != "" {
		if e.RetryMode, err = aws.ParseRetryMode(v); err != nil {
			return e, fmt.Errorf("AWS_RETRY_MODE: %w", err)
		}
	}
	e.BaseEndpoint = os.Getenv("AWS_ENDPOINT_URL")
	if e.IgnoreConfiguredEndpoints, err = envBool("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"); err != nil {
		return e, err
	}
	e.AuthSchemePreference = authSchemeList(os.Getenv("AWS_AUTH_SCHEME_PREFERENCE"))
	return e, checkUnkeptEnv()
}

// checkUnkeptEnv fails where the SDK's NewEnvConfig fails on a variable Env
// does not keep.
func checkUnkeptEnv() error {
	for _, k := range []string{"AWS_DISABLE_REQUEST_COMPRESSION", "AWS_DISABLE_CLOCK_SKEW_CORRECTION",
		"AWS_S3_USE_ARN_REGION", "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS", "AWS_S3_DISABLE_EXPRESS_SESSION_AUTH"} {
		if _, err := envBool(k); err != nil {
			return err
		}
	}
	if v := os.Getenv("AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > 10485760 {
			return fmt.Errorf("AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES=%s: need an integer in [0, 10485760]", v)
		}
	}
	if v := os.Getenv("AWS_DEFAULTS_MODE"); v != "" {
		var m aws.DefaultsMode
		if !m.SetFromString(v) {
			return fmt.Errorf("AWS_DEFAULTS_MODE=%s: not a defaults mode", v)
		}
	}
	for _, c := range []struct {
		key     string
		fold    bool
		allowed []string
	}{
		{"AWS_ENABLE_ENDPOINT_DISCOVERY", true, []string{"true", "false", "auto"}},
		{"AWS_ACCOUNT_ID_ENDPOINT_MODE", false, []string{"preferred", "required", "disabled"}},
		{"AWS_REQUEST_CHECKSUM_CALCULATION", true, []string{"when_supported", "when_required"}},
		{"AWS_RESPONSE_CHECKSUM_VALIDATION", true, []string{"when_supported", "when_required"}},
		{"AWS_RESTRICT_FILE_PERMISSIONS", true, []string{"user_read_write", "unrestricted"}},
	} {
		v := os.Getenv(c.key)
		if v == "" {
			continue
		}
		got := v
		if c.fold {
			got = strings.ToLower(v)
		}
		ok := false
		for _, a := range c.allowed {
			ok = ok || got == a
		}
		if !ok {
			return fmt.Errorf("%s=%s: need one of %s", c.key, v, strings.Join(c.allowed, ", "))
		}
	}
	return nil
}

// firstEnv returns the first of the variables keys that is set and not empty.
func firstEnv(keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// envBool reads the boolean variable key: nil when unset or empty, an
// error when not true or false (any case).
func envBool(key string) (*bool, error) {
	v := os.Getenv(key)
	if v == "" {
		return nil, nil
	}
	var b bool
	switch {
	case strings.EqualFold(v, "true"):
		b = true
	case strings.EqualFold(v, "false"):
	default:
		return nil, fmt.Errorf("%s=%s: need true or false", key, v)
	}
	return &b, nil
}
