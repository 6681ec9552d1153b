// Package awssts is the AWS Security Token Service's two credential
// providers that myelin's AWS credential chain uses: AssumeRole (a
// profile's role_arn, signed with the source credentials) and
// AssumeRoleWithWebIdentity (AWS_WEB_IDENTITY_TOKEN_FILE, EKS's IRSA),
// each an aws.CredentialsProvider behaving as the SDK's stscreds
// providers over an STS client built from a config do: the same form
// fields, session-name and duration defaults, retries and credentials
// (issue 34: so bedrock links no STS client).
//
// It sends to the endpoint it is given: it must not resolve endpoints
// (awsendpoint does), read the environment or the shared files (the
// chain does), cache credentials (the chain wraps the provider in an
// aws.CredentialsCache), or import the SDK's stscreds or service
// packages. Its errors name the role and STS's error code and message,
// never a key, session token or web identity token.
package awssts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awscall"
)

// Client is how a provider reaches STS; the chain fills it: the client of
// any AWS service (its HTTP client, endpoint — awsendpoint.Resolve's, or
// the configured one; its path, if any, is where the request goes, its
// query is dropped, as the SDK's client does — attempts, backoff, and the
// endpoint's resolution error, which fails every call), and the region
// AssumeRole is signed for.
type Client struct {
	awscall.Client
	// SigningRegion is the region AssumeRole is signed for
	// (awsendpoint.Resolve's signing region).
	SigningRegion string
}

// The Source of the credentials each provider returns: the names the
// SDK's stscreds providers give.
const (
	assumeRoleSource  = "AssumeRoleProvider"
	webIdentitySource = "WebIdentityCredentials"
)

// defaultDuration is the lifetime AssumeRole asks for when none is set:
// stscreds' DefaultDuration.
const defaultDuration = 15 * time.Minute

// AssumeRoleOptions are a profile's role settings.
type AssumeRoleOptions struct {
	// RoleARN is the role to assume (role_arn).
	RoleARN string
	// RoleSessionName is role_session_name; "" is "aws-go-sdk-" and the
	// time in Unix nanoseconds at the first Retrieve, then kept.
	RoleSessionName string
	// ExternalID is external_id; "" sends none.
	ExternalID string
	// Duration is the credentials' lifetime asked for
	// (duration_seconds; the chain passes it only above 15 minutes, as
	// the SDK's config does); 0 is 15 minutes.
	Duration time.Duration
}

// NewAssumeRole returns the provider of a role's credentials: each
// Retrieve retrieves source's credentials and sends STS AssumeRole
// signed with them (SigV4, service "sts", c.SigningRegion).
func NewAssumeRole(c Client, source aws.CredentialsProvider, o AssumeRoleOptions) aws.CredentialsProvider {
	return &assumeRole{client: c, source: source, options: o}
}

type assumeRole struct {
	client  Client
	source  aws.CredentialsProvider
	mu      sync.Mutex // guards options.RoleSessionName, set once
	options AssumeRoleOptions
	skew    atomic.Int64 // STS's clock minus ours at the last call, ns
}

// Retrieve assumes the role.
func (p *assumeRole) Retrieve(ctx context.Context) (aws.Credentials, error) {
	p.mu.Lock()
	if p.options.RoleSessionName == "" {
		p.options.RoleSessionName = fmt.Sprintf("aws-go-sdk-%d", time.Now().UTC().UnixNano())
	}
	o := p.options
	p.mu.Unlock()
	if o.Duration == 0 {
		o.Duration = defaultDuration
	}
	form := url.Values{
		"Action":          {"AssumeRole"},
		"Version":         {apiVersion},
		"RoleArn":         {o.RoleARN},
		"RoleSessionName": {o.RoleSessionName},
		"DurationSeconds": {strconv.Itoa(int(int32(o.Duration / time.Second)))},
	}
	if o.ExternalID != "" {
		form.Set("ExternalId", o.ExternalID)
	}
	sign := func(ctx context.Context, req *http.Request, body []byte, at time.Time) error {
		if p.source == nil {
			return fmt.Errorf("no source credentials to sign with")
		}
		creds, err := p.source.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("source credentials: %w", err)
		}
		return signV4(ctx, req, body, creds, p.client.SigningRegion, at)
	}
	creds, err := p.client.call(ctx, operation{form: form, sign: sign, result: "AssumeRoleResult",
		retryCode: retryableAssumeRoleCode, errorType: assumeRoleErrorType, skew: &p.skew})
	if err != nil {
		return aws.Credentials{Source: assumeRoleSource}, fmt.Errorf("awssts: AssumeRole %s: %w", o.RoleARN, err)
	}
	creds.Source = assumeRoleSource
	return creds, nil
}

// WebIdentityOptions are the web identity settings, from
// AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN and AWS_ROLE_SESSION_NAME or
// a profile's web_identity_token_file, role_arn and role_session_name.
type WebIdentityOptions struct {
	// RoleARN is the role to assume.
	RoleARN string
	// RoleSessionName is the session's name; "" is the time in Unix
	// nanoseconds, anew at each Retrieve.
	RoleSessionName string
	// TokenFile holds the token (an OIDC JWT), sent as read, read anew at
	// each Retrieve (the file is rotated under a running process); a
	// file over 1 MiB is refused.
	TokenFile string
}

// NewWebIdentity returns the provider of a role's credentials for a web
// identity token: each Retrieve reads the token file and sends STS
// AssumeRoleWithWebIdentity, unsigned (the token is the proof), as the
// SDK does. InvalidIdentityToken is retried, as stscreds does.
func NewWebIdentity(c Client, o WebIdentityOptions) aws.CredentialsProvider {
	return &webIdentity{client: c, options: o}
}

type webIdentity struct {
	client  Client
	options WebIdentityOptions
	skew    atomic.Int64 // STS's clock minus ours at the last call, ns
}

// Retrieve assumes the role with the token the file holds now.
func (p *webIdentity) Retrieve(ctx context.Context) (aws.Credentials, error) {
	o := p.options
	token, err := readToken(o.TokenFile)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("awssts: AssumeRoleWithWebIdentity %s: reading the web identity token: %w", o.RoleARN, err)
	}
	if o.RoleSessionName == "" {
		o.RoleSessionName = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	form := url.Values{
		"Action":           {"AssumeRoleWithWebIdentity"},
		"Version":          {apiVersion},
		"RoleArn":          {o.RoleARN},
		"RoleSessionName":  {o.RoleSessionName},
		"WebIdentityToken": {string(token)},
	}
	creds, err := p.client.call(ctx, operation{form: form, result: "AssumeRoleWithWebIdentityResult",
		retryCode: retryableWebIdentityCode, errorType: webIdentityErrorType, skew: &p.skew})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("awssts: AssumeRoleWithWebIdentity %s: %w", o.RoleARN, err)
	}
	creds.Source = webIdentitySource
	return creds, nil
}

// maxTokenSize bounds the web identity token file's size: a JWT is a
// few KiB; the SDK reads the file whole, whatever it holds.
const maxTokenSize = 1 << 20

// readToken is the content of the web identity token file, at most
// maxTokenSize bytes: a larger file (or one that never ends) is an
// error, read no further.
func readToken(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	token, err := io.ReadAll(io.LimitReader(f, maxTokenSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(token) > maxTokenSize {
		return nil, fmt.Errorf("%s holds more than %d bytes (a web identity token is a JWT of a few KiB)", file, maxTokenSize)
	}
	return token, nil
}

// retryableAssumeRoleCode is the STS client's one retryable code of its
// own; AssumeRole knows no IDPCommunicationError type, so it is matched
// exactly, as the SDK's generic error keeps the code as sent.
func retryableAssumeRoleCode(code string) bool {
	return code == "IDPCommunicationError"
}

// retryableWebIdentityCode adds stscreds' InvalidIdentityToken; both
// are error types of AssumeRoleWithWebIdentity, whose codes come spelled
// as the types spell them, whatever the case STS sent.
func retryableWebIdentityCode(code string) bool {
	return code == "IDPCommunicationError" || code == "InvalidIdentityToken"
}

// assumeRoleErrorType is the code as the SDK's STS client's error type
// of AssumeRole spells it, if there is one.
func assumeRoleErrorType(code string) (string, bool) {
	return oneOf(code, "ExpiredTokenException", "MalformedPolicyDocument", "PackedPolicyTooLarge", "RegionDisabledException")
}

// webIdentityErrorType is the code as the SDK's STS client's error type
// of AssumeRoleWithWebIdentity spells it, if there is one.
func webIdentityErrorType(code string) (string, bool) {
	return oneOf(code, "ExpiredTokenException", "IDPCommunicationError", "IDPRejectedClaim", "InvalidIdentityToken",
		"MalformedPolicyDocument", "PackedPolicyTooLarge", "RegionDisabledException")
}
