// Package awsconfig loads the AWS configuration bedrock signs its requests
// with — the region, the credentials, an SSO session's bearer token
// provider and the auth scheme preference — and what says where it sends
// them (the configured endpoints, FIPS, dual-stack) from the environment and the
// shared config and credentials files, in the order and with the outcome
// of the AWS SDK's config.LoadDefaultConfig (compat_test.go holds it to
// that function over many environments).
//
// It exists so that a myelin process does not link the SDK's STS, SSO,
// SSO OIDC and sign-in service clients, which config links through its
// credential providers and whose package state is built at start in every
// process, bedrock used or not (issue 34: a cold start's memory and CPU).
// It keeps the SDK's packages that link no service client (static,
// process, container and instance-metadata credentials) and reaches STS,
// SSO, SSO OIDC and sign-in through bedrock's own small clients (awssts,
// awssso, awslogin), at the endpoints awsendpoint resolves.
//
// It must not read anything bedrock does not need, print a secret, or
// prompt: a role that needs an MFA code is an error, as it is for a
// program using the SDK without a token provider.
package awsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
	smithybearer "github.com/aws/smithy-go/auth/bearer"

	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsendpoint"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awslogin"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsprofile"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awssso"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awssts"
)

// Load returns the AWS configuration as config.LoadDefaultConfig would
// with no options, for what bedrock reads of it: Region, Credentials
// (wrapped in an aws.CredentialsCache), BearerAuthTokenProvider (for a
// profile of an SSO session), AuthSchemePreference, and what a client
// made from it reads of its endpoint — BaseEndpoint (AWS_ENDPOINT_URL,
// endpoint_url) and ConfigSources answering, as the SDK's EnvConfig and
// SharedConfig do, about FIPS, dual-stack, ignored configured endpoints
// and a service's own endpoint (AWS_ENDPOINT_URL_<SERVICE>, the services
// section), so that bedrock resolves its address as the SDK's
// bedrockruntime.NewFromConfig would from LoadDefaultConfig's. Its errors are the
// load's (a malformed variable or file, a profile AWS_PROFILE names that
// does not exist, an incomplete profile); credentials that cannot be had
// are their Retrieve's error, at the first request, as with the SDK.
func Load(ctx context.Context) (aws.Config, error) {
	env, err := awsprofile.NewEnv()
	if err != nil {
		return aws.Config{}, fmt.Errorf("reading the AWS environment variables: %w", err)
	}
	prof, err := loadProfile(env)
	if err != nil {
		return aws.Config{}, err
	}
	l := &loader{env: env, prof: prof}
	if l.httpClient, err = l.caBundleClient(); err != nil {
		return aws.Config{}, err
	}
	cfg := aws.Config{Region: l.region(), RetryMaxAttempts: l.maxAttempts(),
		BaseEndpoint: l.baseEndpoint(), ConfigSources: []any{envSource{env}, profileSource{prof}}}
	creds, err := l.credentials(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.Credentials = creds
	if prof.SSOSession != nil {
		cfg.BearerAuthTokenProvider, err = l.bearer(prof.SSOSession)
		if err != nil {
			return aws.Config{}, err
		}
	}
	cfg.AuthSchemePreference = env.AuthSchemePreference
	if len(cfg.AuthSchemePreference) == 0 {
		cfg.AuthSchemePreference = prof.AuthSchemePreference
	}
	return cfg, nil
}

// loadProfile is the profile AWS_PROFILE (or AWS_DEFAULT_PROFILE, or
// "default") names, read from AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE or the default files; a profile that does
// not exist is no profile unless AWS_PROFILE named it, as the SDK has it.
func loadProfile(env awsprofile.Env) (awsprofile.Profile, error) {
	name := env.SharedConfigProfile
	if name == "" {
		name = "default"
	}
	var configFiles, credentialsFiles []string
	if env.SharedConfigFile != "" {
		configFiles = []string{env.SharedConfigFile}
	}
	if env.SharedCredentialsFile != "" {
		credentialsFiles = []string{env.SharedCredentialsFile}
	}
	prof, err := awsprofile.Load(name, configFiles, credentialsFiles)
	if err != nil {
		var missing *awsprofile.ProfileNotExistError
		if errors.As(err, &missing) && os.Getenv("AWS_PROFILE") == "" {
			return awsprofile.Profile{}, nil
		}
		return awsprofile.Profile{}, err // it names the profile and the files
	}
	return prof, nil
}

// loader resolves one configuration from the environment and the profile.
type loader struct {
	env  awsprofile.Env
	prof awsprofile.Profile
	// httpClient is the client of STS, SSO, SSO OIDC and sign-in: nil for
	// the default one, or one trusting only AWS_CA_BUNDLE's (or the
	// profile's ca_bundle's) certificates, as the SDK's.
	httpClient *http.Client
}

// region is AWS_REGION (or AWS_DEFAULT_REGION), else the profile's.
func (l *loader) region() string {
	if l.env.Region != "" {
		return l.env.Region
	}
	return l.prof.Region
}

// maxAttempts is AWS_MAX_ATTEMPTS, else the profile's max_attempts; 0
// leaves the clients' default (3).
func (l *loader) maxAttempts() int {
	if l.env.RetryMaxAttempts != 0 {
		return l.env.RetryMaxAttempts
	}
	return l.prof.RetryMaxAttempts
}

// caBundleClient is the HTTP client trusting the custom CA bundle, or nil
// when none is configured. Like the SDK's, the bundle replaces the
// system's roots rather than adding to them.
func (l *loader) caBundleClient() (*http.Client, error) {
	path := l.env.CustomCABundle
	if path == "" {
		path = l.prof.CustomCABundle
	}
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the AWS custom CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the AWS custom CA bundle %s holds no PEM certificate", path)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: tr}, nil
}

// credentials is the chain: the environment's keys, then the
// environment's web identity, then the profile; wrapped in a cache.
func (l *loader) credentials(ctx context.Context) (aws.CredentialsProvider, error) {
	var (
		p   aws.CredentialsProvider
		err error
	)
	switch {
	case l.env.Credentials.HasKeys():
		p = credentials.StaticCredentialsProvider{Value: l.env.Credentials}
	case l.env.WebIdentityTokenFilePath != "":
		p, err = l.webIdentity(l.env.WebIdentityTokenFilePath, l.env.RoleARN, l.env.RoleSessionName)
	default:
		p, err = l.fromProfile(ctx, &l.prof)
	}
	if err != nil {
		return nil, err
	}
	return cached(p), nil
}

// cached wraps p in a credentials cache unless it is one.
func cached(p aws.CredentialsProvider, optFns ...func(*aws.CredentialsCacheOptions)) aws.CredentialsProvider {
	if _, ok := p.(*aws.CredentialsCache); ok {
		return p
	}
	return aws.NewCredentialsCache(p, optFns...)
}

// fromProfile is a profile's credentials, in the SDK's order: its source
// profile's, its keys, its credential_source, its web identity, SSO,
// `aws login`, credential_process, the container's, the instance's; then,
// when it names a role, that role assumed with them.
func (l *loader) fromProfile(ctx context.Context, sc *awsprofile.Profile) (aws.CredentialsProvider, error) {
	var (
		p   aws.CredentialsProvider
		err error
	)
	switch {
	case sc.Source != nil:
		p, err = l.fromProfile(ctx, sc.Source)
	case sc.Credentials.HasKeys():
		p = credentials.StaticCredentialsProvider{Value: sc.Credentials}
	case sc.CredentialSource != "":
		p, err = l.fromSource(sc)
	case sc.WebIdentityTokenFile != "":
		// the role is the web identity's: no second assumption
		return l.webIdentity(sc.WebIdentityTokenFile, sc.RoleARN, sc.RoleSessionName)
	case sc.HasSSOConfiguration():
		p, err = l.sso(sc)
	case sc.LoginSession != "":
		p, err = l.login(sc)
	case sc.CredentialProcess != "":
		p = processcreds.NewProvider(sc.CredentialProcess)
	case l.env.ContainerCredentialsRelativePath != "":
		p = l.container(ecsContainerEndpoint + l.env.ContainerCredentialsRelativePath)
	case l.env.ContainerCredentialsEndpoint != "":
		p, err = l.localContainer(l.env.ContainerCredentialsEndpoint)
	default:
		p = l.instanceRole()
	}
	if err != nil {
		return nil, err
	}
	if sc.RoleARN != "" {
		return l.assumeRole(p, sc)
	}
	return p, nil
}

// fromSource is a profile's credential_source.
func (l *loader) fromSource(sc *awsprofile.Profile) (aws.CredentialsProvider, error) {
	switch sc.CredentialSource {
	case "Ec2InstanceMetadata":
		return l.instanceRole(), nil
	case "Environment":
		return credentials.StaticCredentialsProvider{Value: l.env.Credentials}, nil
	case "EcsContainer":
		switch {
		case l.env.ContainerCredentialsRelativePath != "":
			return l.container(ecsContainerEndpoint + l.env.ContainerCredentialsRelativePath), nil
		case l.env.ContainerCredentialsEndpoint != "":
			return l.localContainer(l.env.ContainerCredentialsEndpoint)
		}
		return nil, fmt.Errorf("the AWS profile %q has credential_source EcsContainer, but neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor AWS_CONTAINER_CREDENTIALS_FULL_URI is set", sc.Profile)
	}
	return nil, fmt.Errorf("the AWS profile %q has credential_source %q: it must be EcsContainer, Ec2InstanceMetadata or Environment", sc.Profile, sc.CredentialSource)
}

// MFAError is the load's error for a role whose profile names an MFA
// device (mfa_serial): myelin has no one to ask for the code. The SDK's
// loader fails the same profile the same way unless given a token
// provider.
type MFAError struct {
	Profile, RoleARN string
}

// Error names the profile and the role, and what to use instead.
func (e *MFAError) Error() string {
	return fmt.Sprintf("the AWS profile %q assumes the role %s with an MFA code (mfa_serial), which myelin cannot ask for: use credentials that need no code, such as a role session made beforehand", e.Profile, e.RoleARN)
}

// assumeRole is the role sc names, assumed with source's credentials.
func (l *loader) assumeRole(source aws.CredentialsProvider, sc *awsprofile.Profile) (aws.CredentialsProvider, error) {
	if sc.MFASerial != "" {
		return nil, &MFAError{Profile: sc.Profile, RoleARN: sc.RoleARN}
	}
	o := awssts.AssumeRoleOptions{RoleARN: sc.RoleARN, RoleSessionName: sc.RoleSessionName, ExternalID: sc.ExternalID}
	// The SDK takes a duration only over its default of 15 minutes.
	if d := sc.RoleDurationSeconds; d != nil && *d/time.Minute > 15 {
		o.Duration = *d
	}
	// The source is not cached here: the SDK's STS client asks it again at
	// every attempt (an inner role is assumed again, a process run again).
	return awssts.NewAssumeRole(l.stsClient(), source, o), nil
}

// webIdentity is the role roleARN assumed with the token in file.
func (l *loader) webIdentity(file, roleARN, sessionName string) (aws.CredentialsProvider, error) {
	if roleARN == "" {
		return nil, fmt.Errorf("the web identity token file %s is set without a role to assume: set AWS_ROLE_ARN (or role_arn in the profile)", file)
	}
	return awssts.NewWebIdentity(l.stsClient(), awssts.WebIdentityOptions{RoleARN: roleARN, RoleSessionName: sessionName, TokenFile: file}), nil
}

// stsClient is STS at its endpoint for the configuration's region.
func (l *loader) stsClient() awssts.Client {
	c, signing := l.client(awsendpoint.STS, "STS", "sts", l.region())
	return awssts.Client{Client: c, SigningRegion: signing}
}

// sso is an SSO profile's role credentials: with its session's token
// provider (refreshed through SSO OIDC) for an sso-session profile, else
// the legacy profile's cached token.
func (l *loader) sso(sc *awsprofile.Profile) (aws.CredentialsProvider, error) {
	if err := sc.ValidateSSOConfiguration(); err != nil {
		return nil, err
	}
	region := sc.SSORegion
	o := awssso.CredentialsOptions{AccountID: sc.SSOAccountID, RoleName: sc.SSORoleName, StartURL: sc.SSOStartURL}
	if sc.SSOSession != nil {
		region = sc.SSOSession.SSORegion
		path, err := awssso.CachedTokenFilepath(sc.SSOSession.Name)
		if err != nil {
			return nil, err
		}
		oidc, _ := l.client(awsendpoint.SSOOIDC, "SSO_OIDC", "sso_oidc", region)
		o.TokenProvider = awssso.NewTokenProvider(oidc, path)
	}
	c, _ := l.client(awsendpoint.SSO, "SSO", "sso", region)
	return awssso.NewCredentials(c, o), nil
}

// bearer is the token provider of the profile's SSO session, cached as
// the SDK caches it. Like the SDK's, its SSO OIDC client is the
// configuration's region's, not the session's.
func (l *loader) bearer(session *awsprofile.SSOSession) (smithybearer.TokenProvider, error) {
	path, err := awssso.CachedTokenFilepath(session.Name)
	if err != nil {
		return nil, fmt.Errorf("finding the cached token of the SSO session %q: %w", session.Name, err)
	}
	oidc, _ := l.client(awsendpoint.SSOOIDC, "SSO_OIDC", "sso_oidc", l.region())
	p := awssso.NewTokenProvider(oidc, path)
	return smithybearer.NewTokenCache(p, func(o *smithybearer.TokenCacheOptions) {
		o.RefreshBeforeExpires = 5 * time.Minute
		o.RetrieveBearerTokenTimeout = 30 * time.Second
	}), nil
}

// login is the credentials of the profile's `aws login` session.
func (l *loader) login(sc *awsprofile.Profile) (aws.CredentialsProvider, error) {
	path, err := awslogin.CachedTokenFilepath(sc.LoginSession, os.Getenv("AWS_LOGIN_CACHE_DIRECTORY"))
	if err != nil {
		return nil, err
	}
	c, _ := l.client(awsendpoint.Signin, "SIGNIN", "signin", l.region())
	// A cache file made anew is its owner's alone, whatever
	// AWS_RESTRICT_FILE_PERMISSIONS says: it holds a refresh token and a
	// private key. (The SDK's loader restricts it too: it reads that
	// setting only after making the provider.)
	return cached(awslogin.New(c, path, awslogin.Options{RestrictPermissions: true})), nil
}

// client is the client of an AWS service for region, and the region its
// requests are signed for (STS's). An endpoint that cannot be resolved is
// the client's Err: as with the SDK, which resolves an endpoint only when
// it sends, only a call fails with it (an unexpired cached token or
// credentials need none; STS is asked nothing, nor is a role's source).
func (l *loader) client(s awsendpoint.Service, envName, sharedName, region string) (awscall.Client, string) {
	url, signing, err := l.endpoint(s, envName, sharedName, region)
	return awscall.Client{HTTPClient: l.httpClient, Endpoint: url, MaxAttempts: l.maxAttempts(), Err: err}, signing
}

// endpoint is where a service's client sends for region: its configured
// endpoint, else the default of its partition, with FIPS and dual-stack as
// configured. The configured endpoint is the SDK's for a client made while
// the configuration loads: AWS_ENDPOINT_URL_<SERVICE>, else the profile's
// services section — neither when AWS_ENDPOINT_URL is set and
// AWS_ENDPOINT_URL_<SERVICE> is not (the general endpoint is not yet in the
// configuration then), nor when configured endpoints are ignored.
func (l *loader) endpoint(s awsendpoint.Service, envName, sharedName, region string) (url, signingRegion string, err error) {
	configured, found := l.configuredEndpoint(envName, sharedName)
	if found && configured == "" {
		// The SDK's client takes the empty value and sends nowhere; the
		// public endpoint would be a surprise for whoever configured one.
		return "", "", fmt.Errorf("the AWS profile's services section gives %s an empty endpoint_url", sharedName)
	}
	p := awsendpoint.Params{Region: region, UseFIPS: l.fips(), UseDualStack: l.dualStack(), Endpoint: configured}
	url, signingRegion, err = awsendpoint.Resolve(s, p)
	if err != nil {
		return "", "", fmt.Errorf("resolving the endpoint of AWS %s in region %q: %w", sharedName, region, err)
	}
	return url, signingRegion, nil
}

// configuredEndpoint is the endpoint configured for a service, and
// whether one is (an empty endpoint_url in the services section is).
func (l *loader) configuredEndpoint(envName, sharedName string) (string, bool) {
	_, general := os.LookupEnv("AWS_ENDPOINT_URL")
	_, own := os.LookupEnv("AWS_ENDPOINT_URL_" + envName)
	if general && !own {
		return "", false
	}
	if l.ignoreConfiguredEndpoints() {
		return "", false
	}
	if v := os.Getenv("AWS_ENDPOINT_URL_" + envName); v != "" {
		return v, true
	}
	return l.prof.Services.EndpointURL(sharedName)
}

func (l *loader) ignoreConfiguredEndpoints() bool {
	if v := l.env.IgnoreConfiguredEndpoints; v != nil {
		return *v
	}
	if v := l.prof.IgnoreConfiguredEndpoints; v != nil {
		return *v
	}
	return false
}

func (l *loader) fips() bool {
	if v := l.env.UseFIPSEndpoint; v != aws.FIPSEndpointStateUnset {
		return v == aws.FIPSEndpointStateEnabled
	}
	return l.prof.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled
}

func (l *loader) dualStack() bool {
	if v := l.env.UseDualStackEndpoint; v != aws.DualStackEndpointStateUnset {
		return v == aws.DualStackEndpointStateEnabled
	}
	return l.prof.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled
}
