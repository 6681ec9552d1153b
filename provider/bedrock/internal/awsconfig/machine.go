package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// ecsContainerEndpoint is the address AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
// is a path under (ECS's task credentials).
const ecsContainerEndpoint = "http://169.254.170.2"

// container is the credentials a container's endpoint serves (the SDK's
// endpointcreds), with AWS_CONTAINER_AUTHORIZATION_TOKEN, or the token
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE holds, read at each request;
// cached with the SDK's five-minute window.
func (l *loader) container(endpoint string) aws.CredentialsProvider {
	p := endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		if t := l.env.ContainerAuthorizationToken; t != "" {
			o.AuthorizationToken = t
		}
		if file := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file != "" {
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := os.ReadFile(file)
				if err != nil {
					return "", fmt.Errorf("reading the container's authorization token: %w", err)
				}
				return string(b), nil
			})
		}
	})
	return cached(p, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute })
}

// localContainer is container for AWS_CONTAINER_CREDENTIALS_FULL_URI,
// whose plain-HTTP host must be a loopback or a container agent's address
// (every address its name resolves to), as the SDK requires: credentials
// must not be fetched in the clear from anywhere else.
func (l *loader) localContainer(endpoint string) (aws.CredentialsProvider, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL: %w", err)
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("AWS_CONTAINER_CREDENTIALS_FULL_URI has no host") // not quoted: it may hold user information
	}
	if u.Scheme == "http" {
		ok, err := allowedContainerHost(host)
		if err != nil {
			return nil, fmt.Errorf("resolving the host %q of AWS_CONTAINER_CREDENTIALS_FULL_URI: %w", host, err)
		}
		if !ok {
			return nil, fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI's host %q is not a loopback, ECS or EKS address: plain HTTP is allowed to those only", host)
		}
	}
	return l.container(endpoint), nil
}

// lookupHost resolves a name; a test may replace it.
var lookupHost = func(host string) ([]string, error) {
	return net.DefaultResolver.LookupHost(context.Background(), host)
}

func allowedContainerHost(host string) (bool, error) {
	if ip := net.ParseIP(host); ip != nil {
		return allowedContainerIP(ip), nil
	}
	addrs, err := lookupHost(host)
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil || !allowedContainerIP(ip) {
			return false, nil
		}
	}
	return true, nil
}

// allowedContainerIP is whether ip is a loopback or a container agent's
// address: ECS's, EKS's over IPv4 and IPv6. (Made here, not as package
// variables: nothing is built at a process's start for a wire it may
// never use.)
func allowedContainerIP(ip net.IP) bool {
	return ip.IsLoopback() || ip.Equal(net.IPv4(169, 254, 170, 2)) ||
		ip.Equal(net.IPv4(169, 254, 170, 23)) || ip.Equal(net.ParseIP("fd00:ec2::23"))
}

// instanceRole is the EC2 instance's role credentials through its
// metadata service (the SDK's ec2rolecreds and imds), with the metadata
// settings of the environment, else of the profile;
// AWS_EC2_METADATA_DISABLED and AWS_EC2_METADATA_SERVICE_ENDPOINT are
// read by imds itself too.
func (l *loader) instanceRole() aws.CredentialsProvider {
	o := imds.Options{
		ClientEnableState: l.env.EC2IMDSClientEnableState,
		EndpointMode:      l.env.EC2IMDSEndpointMode,
		Endpoint:          l.env.EC2IMDSEndpoint,
	}
	if o.EndpointMode == imds.EndpointModeStateUnset {
		o.EndpointMode = l.prof.EC2IMDSEndpointMode
	}
	if o.Endpoint == "" {
		o.Endpoint = l.prof.EC2IMDSEndpoint
	}
	disabled := l.env.EC2IMDSv1Disabled
	if disabled == nil {
		disabled = l.prof.EC2IMDSv1Disabled
	}
	if disabled != nil {
		o.EnableFallback = aws.BoolTernary(!*disabled)
	}
	client := imds.New(o)
	return cached(ec2rolecreds.New(func(o *ec2rolecreds.Options) { o.Client = client }))
}
