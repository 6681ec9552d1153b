// Package awsendpoint is where myelin's AWS credential loading sends its
// requests, and bedrock its own: the default endpoint of the STS, SSO
// (portal.sso), SSO-OIDC (oidc), sign-in and Bedrock Runtime services for
// a region, with FIPS, dual-stack or a configured base endpoint, as the
// AWS SDK's clients of those services resolve it (their
// EndpointResolverV2 rules over the SDK's partitions, after the clients'
// own checks of the region), so that bedrock need not link those clients
// and their tables (issue 34).
//
// It resolves addresses only: it must not read the environment or the
// shared files (the chain, awsconfig, decides the parameters), send
// anything, or import the SDK's service or internal/endpoints packages.
package awsendpoint

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Service is one of the AWS services credential loading talks to.
type Service int

// The services whose endpoints Resolve knows.
const (
	// STS is the Security Token Service (AssumeRole,
	// AssumeRoleWithWebIdentity).
	STS Service = iota + 1
	// SSO is the IAM Identity Center portal (GetRoleCredentials).
	SSO
	// SSOOIDC is the IAM Identity Center OIDC service (CreateToken).
	SSOOIDC
	// Signin is the AWS sign-in service: the endpoint of
	// CreateOAuth2Token, which `aws login` sessions refresh with (its
	// control-plane and IAM OAuth operations resolve elsewhere).
	Signin
	// BedrockRuntime is Amazon Bedrock's runtime (InvokeModel,
	// InvokeModelWithResponseStream): where bedrock sends Claude's
	// requests, not a service of credential loading.
	BedrockRuntime
)

// String is the service's name in errors.
func (s Service) String() string {
	switch s {
	case STS:
		return "sts"
	case SSO:
		return "sso"
	case SSOOIDC:
		return "sso-oidc"
	case Signin:
		return "signin"
	case BedrockRuntime:
		return "bedrock-runtime"
	}
	return fmt.Sprintf("Service(%d)", int(s))
}

// Params are what the SDK's clients resolve an endpoint from, as the
// chain has them: the client's region, use_fips_endpoint,
// use_dualstack_endpoint, and the service's configured base endpoint
// (AWS_ENDPOINT_URL_<SERVICE>, endpoint_url…; "" for none). STS is
// resolved as a client built from a config leaves it: regional, not the
// legacy global endpoint.
type Params struct {
	// Region is the client's region as configured (AWS_REGION, region,
	// sso_region…), checked and used as the SDK's clients do.
	Region string
	// UseFIPS asks for the FIPS endpoint (AWS_USE_FIPS_ENDPOINT,
	// use_fips_endpoint).
	UseFIPS bool
	// UseDualStack asks for the dual-stack endpoint
	// (AWS_USE_DUALSTACK_ENDPOINT, use_dualstack_endpoint).
	UseDualStack bool
	// Endpoint is the service's configured base endpoint, "" for none.
	Endpoint string
}

// ErrInvalid is wrapped by every error of Resolve: the parameters make
// no endpoint (the SDK's client fails on them before sending).
var ErrInvalid = errors.New("no endpoint for these settings")

// Resolve returns the URL the SDK's client of service s sends to for p
// (scheme and host, or the configured endpoint as given, to which the
// operation's path is joined), and the region it signs a SigV4 request
// with: p.Region as given, but us-east-1 for STS's aws-global. It errs
// where the SDK's client does: a region that is not a host name, no
// region and no endpoint, FIPS or dual-stack with a configured endpoint,
// a configured endpoint that is not a URL, FIPS or dual-stack in a
// partition without it. Its errors show a configured endpoint without
// its user information, query and fragment, and one that is not an
// absolute URL not at all.
//
// As the SDK's clients, a region spelled with "fips" (fips-us-east-1,
// us-east-1-fips) turns FIPS on and resolves as the region without it
// (but is signed for as spelled), and a region no partition knows is in
// the "aws" partition.
func Resolve(s Service, p Params) (endpoint, signingRegion string, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("awsendpoint: %s endpoint: %w", s, err)
		}
	}()
	if s < STS || s > BedrockRuntime {
		return "", "", fmt.Errorf("unknown service: %w", ErrInvalid)
	}
	region, hasRegion := p.Region, p.Region != ""
	if hasRegion {
		if !validRegion(region) {
			return "", "", fmt.Errorf("region %q is not a valid host name: %w", region, ErrInvalid)
		}
		if r := withoutFIPS(region); r != region {
			region, p.UseFIPS = r, true
		}
	}
	if p.Endpoint != "" {
		u, err := url.Parse(p.Endpoint)
		shown := shownEndpoint(p.Endpoint)
		switch {
		case p.UseFIPS:
			return "", "", fmt.Errorf("FIPS cannot be used with %s: %w", shown, ErrInvalid)
		case p.UseDualStack:
			return "", "", fmt.Errorf("dual-stack cannot be used with %s: %w", shown, ErrInvalid)
		case err != nil:
			// Not %w: url.Parse's error holds the endpoint as given.
			return "", "", fmt.Errorf("the configured endpoint is not a URL: %s: %w", whyNotURL(err), ErrInvalid)
		case !strings.EqualFold(u.Scheme, "https") && !strings.EqualFold(u.Scheme, "http") || u.Host == "":
			// localhost:8080, user:secret@host: the SDK's client takes
			// it and sends to no host, every attempt failing
			return "", "", fmt.Errorf("the configured endpoint has no http:// or https:// scheme and host (want https://host...): %w", ErrInvalid)
		}
		return p.Endpoint, p.Region, nil
	}
	if !hasRegion {
		return "", "", fmt.Errorf("no region is set: %w", ErrInvalid)
	}
	part := partitionOf(region)
	var host string
	switch s {
	case STS:
		host, err = regionalHost("sts", region, part, p, true)
		if err == nil && region == "aws-global" && !p.UseFIPS && !p.UseDualStack {
			return "https://sts.amazonaws.com", "us-east-1", nil
		}
	case SSO:
		host, err = regionalHost("portal.sso", region, part, p, true)
	case SSOOIDC:
		host, err = regionalHost("oidc", region, part, p, true)
	case Signin:
		host, err = signinHost(region, part, p)
	case BedrockRuntime:
		host, err = regionalHost("bedrock-runtime", region, part, p, false)
	}
	if err != nil {
		return "", "", err
	}
	endpoint = "https://" + host
	if _, err := url.Parse(endpoint); err != nil {
		return "", "", fmt.Errorf("region %q makes no URL: %w (%w)", p.Region, err, ErrInvalid)
	}
	return endpoint, p.Region, nil
}

// regionalHost is the host of the rules STS, SSO, SSO-OIDC and Bedrock
// Runtime share: SERVICE[-fips].REGION.SUFFIX, but, where govFIPSPlain
// (STS, SSO, SSO-OIDC: those endpoints are FIPS already), aws-us-gov's
// FIPS host is the plain one. (Bedrock Runtime's rules have no such
// exception: bedrock-runtime-fips.us-gov-west-1.amazonaws.com.)
func regionalHost(service, region string, part *partition, p Params, govFIPSPlain bool) (string, error) {
	switch {
	case p.UseFIPS && p.UseDualStack:
		if !part.supportsFIPS || !part.supportsDualStack {
			return "", unsupported(part, "FIPS and dual-stack")
		}
		return service + "-fips." + region + "." + part.dualStackDNSSuffix, nil
	case p.UseFIPS:
		if !part.supportsFIPS {
			return "", unsupported(part, "FIPS")
		}
		if govFIPSPlain && part.name == "aws-us-gov" {
			return service + "." + region + ".amazonaws.com", nil
		}
		return service + "-fips." + region + "." + part.dnsSuffix, nil
	case p.UseDualStack:
		if !part.supportsDualStack {
			return "", unsupported(part, "dual-stack")
		}
		return service + "." + region + "." + part.dualStackDNSSuffix, nil
	}
	return service + "." + region + "." + part.dnsSuffix, nil
}

// signinSuffix is the sign-in service's host suffix (after REGION) in
// the partitions its rules name, "" in the others. (A switch, not a map:
// nothing to build at init in every myelin process.)
func signinSuffix(partition string) string {
	switch partition {
	case "aws":
		return ".signin.aws.amazon.com"
	case "aws-cn":
		return ".signin.amazonaws.cn"
	case "aws-us-gov":
		return ".signin.amazonaws-us-gov.com"
	case "aws-iso":
		return ".signin.c2shome.ic.gov"
	case "aws-iso-b":
		return ".signin.sc2shome.sgov.gov"
	case "aws-iso-f":
		return ".signin.csphome.hci.ic.gov"
	case "aws-iso-e":
		return ".signin.csphome.adc-e.uk"
	case "aws-eusc":
		return ".signin.amazonaws-eusc.eu"
	}
	return ""
}

// signinHost is the sign-in service's host for its data-plane, non-OAuth
// operations (CreateOAuth2Token, which `aws login` refreshes with).
func signinHost(region string, part *partition, p Params) (string, error) {
	switch {
	case p.UseFIPS && p.UseDualStack:
		if !part.supportsFIPS || !part.supportsDualStack {
			return "", unsupported(part, "FIPS and dual-stack")
		}
		return "signin-fips." + region + "." + part.dualStackDNSSuffix, nil
	case p.UseFIPS:
		switch {
		case region == "us-gov-west-1":
			return "signin-fips.amazonaws-us-gov.com", nil
		case part.name == "aws-us-gov":
			return region + ".signin-fips.amazonaws-us-gov.com", nil
		case !part.supportsFIPS:
			return "", unsupported(part, "FIPS")
		}
		return "signin-fips." + region + "." + part.dnsSuffix, nil
	case p.UseDualStack:
		if !part.supportsDualStack {
			return "", unsupported(part, "dual-stack")
		}
		return "signin." + region + "." + part.dualStackDNSSuffix, nil
	}
	if suffix := signinSuffix(part.name); suffix != "" {
		return region + suffix, nil
	}
	return region + ".signin." + part.dnsSuffix, nil
}

func unsupported(part *partition, what string) error {
	return fmt.Errorf("partition %s does not support %s: %w", part.name, what, ErrInvalid)
}

// validRegion is the SDK clients' check of a region: dot-separated
// labels of 1 to 63 ASCII letters, digits and hyphens, none starting or
// ending with a hyphen.
func validRegion(region string) bool {
	for _, label := range strings.Split(region, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
				return false
			}
		}
	}
	return true
}

// withoutFIPS drops "fips" from a pseudo region as the SDK's clients do:
// "-fips-" becomes "-", then "fips-" and "-fips" go.
func withoutFIPS(region string) string {
	region = strings.ReplaceAll(region, "-fips-", "-")
	region = strings.ReplaceAll(region, "fips-", "")
	return strings.ReplaceAll(region, "-fips", "")
}

// shownEndpoint is a configured endpoint as errors show it, never as
// given, for it may hold a secret: its scheme, host and path, its user
// information (a password, or a token as the user name) as "xxxxx" and
// its query and fragment left out; an endpoint that is not an absolute
// URL is not shown at all (url.Parse reads "user:password@host" as a
// URL of scheme "user").
func shownEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "the configured endpoint (which is not an absolute URL)"
	}
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.User != nil {
		v.User = url.User("xxxxx")
	}
	s := fmt.Sprintf("the configured endpoint %q", v.String())
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		s += " (its query or fragment not shown)"
	}
	return s
}

// whyNotURL is what url.Parse found wrong, without the URL or any part
// of it: its message with the quoted parts (the URL's text, such as a
// port that may be a password typed in its place) left out.
func whyNotURL(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		if msg[i] != '"' {
			b.WriteByte(msg[i])
			continue
		}
		// Skip to the closing quote (Go's %q escapes a quote inside).
		for i++; i < len(msg) && msg[i] != '"'; i++ {
			if msg[i] == '\\' {
				i++
			}
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
