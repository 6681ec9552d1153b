// Package bedrock is Claude on Amazon Bedrock: the Anthropic Messages wire
// (provider/anthropic: its encoder, cache markers and reading of the
// answer) sent to InvokeModel (/model/MODEL/invoke) or
// InvokeModelWithResponseStream (/model/MODEL/invoke-with-response-stream)
// with the model in the URL, each request signed with AWS SigV4 by the AWS
// SDK's signer (or sent with AWS_BEARER_TOKEN_BEDROCK as a bearer token);
// the wire reads Bedrock's binary event stream itself, frame by frame,
// into the API's events (provider/anthropic's Platform.EventStream).
//
// The body is the first-party wire's, byte for byte, less "model" and
// "stream" (the URL says them) and with
// "anthropic_version":"bedrock-2023-05-31" at its end, the value the
// Bedrock documentation requires; the interleaved-thinking beta goes in
// it as "anthropic_beta". The wire writes that body itself
// (provider/anthropic's Platform.Send): the bytes, URL and headers sent
// are those anthropic-sdk-go's bedrock middleware made of the first-party
// request (TestWhatIsSentIsWhatTheSDKsMiddlewareSent), without its passes
// over the body. Prompt caching is the first-party wire's cache_control
// markers, which Bedrock takes for the models that support caching. It
// must not read or send an Anthropic API key.
package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/bedrock/internal/awsconfig"
	"github.com/myelin-run/myelin/ratelimit"
)

// Version is the anthropic_version sent in the body: the one the Bedrock
// documentation for Claude's Messages API requires.
const Version = "bedrock-2023-05-31"

// Config configures the wire on Bedrock. The zero value loads the AWS
// configuration the usual way, as the AWS SDK's LoadDefaultConfig finds
// it (internal/awsconfig, without linking the SDK's service clients):
// AWS_REGION (or AWS_DEFAULT_REGION), AWS_PROFILE, AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, web identity, the shared
// config and credentials files (roles, SSO, aws login,
// credential_process), the container's and the instance's role;
// AWS_BEARER_TOKEN_BEDROCK, when set, is sent instead of a signature;
// ANTHROPIC_BEDROCK_BASE_URL, when set, replaces the address.
//
// The address is the AWS SDK's bedrockruntime client's for the same
// configuration: Bedrock Runtime's configured endpoint
// (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, the profile's services section,
// AWS_ENDPOINT_URL or endpoint_url, none with
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), else its endpoint in the region's
// partition (.amazonaws.com, .amazonaws.com.cn…), FIPS
// (AWS_USE_FIPS_ENDPOINT, use_fips_endpoint) and dual-stack
// (AWS_USE_DUALSTACK_ENDPOINT, use_dualstack_endpoint) as configured; the
// invoke paths go under a configured endpoint's path. A given AWS
// configuration is read as that client reads it (its BaseEndpoint and
// ConfigSources).
type Config struct {
	// Config is the wire's own settings, as on the first-party API: its
	// BaseURL, when set, replaces the address (the AWS SDK's, or
	// $ANTHROPIC_BEDROCK_BASE_URL) for a proxy or a test's fake; NoStream
	// calls InvokeModel, the answer then arriving whole; MaxRetries and
	// HTTPClient as there. Its APIKey must stay empty.
	anthropic.Config
	// AWS is the AWS configuration (its Region and Credentials, and its
	// BearerAuthTokenProvider and AuthSchemePreference); nil loads the
	// default one, as the AWS SDK and CLI do.
	AWS *aws.Config
}

// New returns the wire, or an error that says what is missing (a region,
// any credentials), why the AWS configuration could not be loaded, or why
// it makes no address (a region that is not one, FIPS or dual-stack where
// the partition or a configured endpoint rules them out, a configured
// endpoint that is not a URL; never the endpoint's secrets). Credentials are
// resolved at the first request, as the AWS SDK does; their absence is
// then that request's error.
func New(cfg Config) (*anthropic.OnPlatform, error) {
	var awsCfg aws.Config
	loaded := cfg.AWS == nil
	if cfg.AWS != nil {
		awsCfg = *cfg.AWS
	} else {
		c, err := awsconfig.Load(context.Background())
		if err != nil {
			return nil, fmt.Errorf("bedrock: loading the AWS configuration: %w", err)
		}
		awsCfg = c
	}
	if awsCfg.Region == "" {
		return nil, errors.New("bedrock: no AWS region: set AWS_REGION (or a region in the AWS profile that AWS_PROFILE names)")
	}
	s := newSender(awsCfg)
	if s.bearer == nil && s.credentials == nil {
		// The SDK's bedrock package failed each request so; an error of
		// a request's Send would be retried as a connection's.
		return nil, errors.New("bedrock: expected AWS credentials to be set: the AWS configuration has neither credentials nor a bearer token provider")
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv("ANTHROPIC_BEDROCK_BASE_URL")
	}
	if base == "" {
		// Where the AWS SDK's bedrockruntime client would send, and
		// the region it would sign for.
		var err error
		if base, s.region, err = address(awsCfg); err != nil {
			return nil, err
		}
	}
	return anthropic.NewOn(anthropic.Platform{
		Name:        "bedrock",
		Version:     Version,
		BaseURL:     base,
		Send:        s.send,
		StreamInURL: true,
		BetasInBody: true,
		// the wire reads the event stream's frames itself
		EventStream: true,
		Identity:    identity(awsCfg.Region, loaded),
	}, cfg.Config)
}

// identity names the AWS account the wire's requests are authorized by,
// for the rate limiter's key (docs/ratelimits.md, "Platforms"): "aws:",
// the region, "/" and who — ratelimit.Identity (a hash) of
// AWS_BEARER_TOKEN_BEDROCK when that authorizes them; else, for a
// configuration loaded from the environment (loaded), the hash of
// AWS_ACCESS_KEY_ID (the static key's id, which outlives its session
// tokens), else "profile:" and AWS_PROFILE; else "default" (an instance's
// role, SSO, a configuration given whole: what the process runs as,
// which cannot be named without asking AWS). Never a secret, never a
// session token.
func identity(region string, loaded bool) string {
	who := "default"
	switch {
	case os.Getenv("AWS_BEARER_TOKEN_BEDROCK") != "":
		who = ratelimit.Identity(os.Getenv("AWS_BEARER_TOKEN_BEDROCK"))
	case loaded && os.Getenv("AWS_ACCESS_KEY_ID") != "":
		who = ratelimit.Identity(os.Getenv("AWS_ACCESS_KEY_ID"))
	case loaded && os.Getenv("AWS_PROFILE") != "":
		who = "profile:" + os.Getenv("AWS_PROFILE")
	}
	return "aws:" + region + "/" + who
}

// sender routes and authorizes each request to Bedrock: the model into
// the path of InvokeModel or InvokeModelWithResponseStream, then a bearer
// token or a SigV4 signature. It does nothing else to the request.
type sender struct {
	region string
	// bearer, when set, authorizes with a bearer token instead of a
	// signature: AWS_BEARER_TOKEN_BEDROCK, or the AWS configuration's
	// token provider where its auth scheme preference puts bearer first
	// or it has no credentials (the order of the SDK's bedrock package).
	bearer interface {
		token(ctx context.Context) (string, error)
	}
	credentials aws.CredentialsProvider
	signer      *v4.Signer
}

func newSender(cfg aws.Config) *sender {
	s := &sender{region: cfg.Region, credentials: cfg.Credentials, signer: v4.NewSigner()}
	prefersBearer := len(cfg.AuthSchemePreference) > 0 && cfg.AuthSchemePreference[0] == "httpBearerAuth"
	switch token := os.Getenv("AWS_BEARER_TOKEN_BEDROCK"); {
	case token != "":
		s.bearer = staticToken(token)
	case prefersBearer && cfg.BearerAuthTokenProvider != nil, cfg.Credentials == nil && cfg.BearerAuthTokenProvider != nil:
		s.bearer = tokenProvider{cfg}
	}
	return s
}

// staticToken is a bearer token given whole (AWS_BEARER_TOKEN_BEDROCK).
type staticToken string

func (t staticToken) token(context.Context) (string, error) { return string(t), nil }

// tokenProvider is the AWS configuration's bearer token provider.
type tokenProvider struct{ cfg aws.Config }

func (p tokenProvider) token(ctx context.Context) (string, error) {
	t, err := p.cfg.BearerAuthTokenProvider.RetrieveBearerToken(ctx)
	return t.Value, err
}

// invokePath is the escaped path, under the address, of InvokeModel for
// model, or of InvokeModelWithResponseStream when stream; an error when the
// model is empty or would not be one segment of it.
func invokePath(model string, stream bool) (string, error) {
	if model == "" {
		return "", errors.New("bedrock: missing required model parameter")
	}
	method := "invoke"
	if stream {
		method = "invoke-with-response-stream"
	}
	seg := anthropic.PathSegment(model)
	path := "/model/" + seg + "/" + method
	if err := anthropic.CheckSegment(path, seg); err != nil {
		return "", fmt.Errorf("bedrock: %w", err)
	}
	return path, nil
}

// send points r, the SDK's request for /v1/messages under the address,
// at the model's invoke path under the same address, and authorizes it.
// A path it cannot make is final (provider.Final): every attempt would
// fail alike, so the sender does not retry it, nor the agent send it
// again; so is a signature that cannot be made.
func (s *sender) send(r *http.Request, rt anthropic.Route) error {
	path, err := invokePath(rt.Model, rt.Stream)
	if err != nil {
		return provider.Final(err)
	}
	raw := strings.TrimSuffix(r.URL.EscapedPath(), "/v1/messages") + path
	if r.URL.Path, err = url.PathUnescape(raw); err != nil {
		return provider.Final(fmt.Errorf("bedrock: the path %q: %w", raw, err))
	}
	r.URL.RawPath = raw // kept by net/url while it decodes to Path
	ctx := r.Context()
	var creds aws.Credentials
	if s.bearer != nil {
		var token string
		if err := authorize(ctx, func() (err error) { token, err = s.bearer.token(ctx); return err }); err != nil {
			return err
		}
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	if err := authorize(ctx, func() (err error) { creds, err = s.credentials.Retrieve(ctx); return err }); err != nil {
		return err
	}
	// Trace context headers are not signed: a proxy may rewrite them.
	held := map[string][]string{}
	for _, name := range unsigned {
		if v, ok := r.Header[name]; ok {
			held[name] = v
			delete(r.Header, name)
		}
	}
	sum := sha256.Sum256(rt.Body)
	err = s.signer.SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), "bedrock", s.region, time.Now())
	for name, v := range held {
		r.Header[name] = v
	}
	return provider.Final(err)
}

// authorize gets an attempt's credentials or token (get), once: a
// failure the AWS SDK's standard retryer calls retryable (a connection's,
// a 5xx, a throttling; its providers retried their own calls already) is
// the attempt's, marked provider.Unsent, which the wire's sender retries
// as it retries a send's own failure — with its notice, within its
// count or --retry-for and the deadline the agent set — and ends as a
// provider.ConnectionError the agent sends the request again for, as the
// AWS SDK's clients retry it in the same loop as their sends. Any other
// failure, and an instance metadata service that cannot be connected to
// (noInstanceRole), is final (provider.Final): a machine without
// credentials learns why at once, not after --retry-for.
func authorize(ctx context.Context, get func() error) error {
	err := get()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w (asking for credentials: %v)", ctx.Err(), err)
	case noInstanceRole(err) || !retry.NewStandard().IsErrorRetryable(err):
		return provider.Final(provider.Unsent(err))
	}
	return provider.Unsent(err)
}

// noInstanceRole reports whether err is the instance metadata service's
// (the default chain's last resort, the EC2 instance's role) that could
// not be connected to: a machine that has none (a laptop) — no
// credentials configured, which the AWS SDK's retryer would call a
// connection's failure and another attempt never mends. An answer of the
// service (a 5xx as it rotates the role's credentials) is not one. A
// container past the IMDSv2 hop limit is not one either (its connection
// is made; the token's answer never comes): that failure is final by the
// IMDS client's own 5 s operation timeout, whose "canceled, context
// deadline exceeded" the standard retryer does not retry.
func noInstanceRole(err error) bool {
	var op *smithy.OperationError
	return errors.As(err, &op) && op.ServiceID == imds.ServiceID && provider.Unconnected(err)
}

// unsigned are the headers left out of the signature, as the SDK's bedrock
// middleware leaves them: W3C trace context and baggage.
var unsigned = []string{"Traceparent", "Tracestate", "Baggage"}
