package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// blip is credentials whose first fail Retrieves fail with err (every
// one, with fail < 0), counting the calls.
type blip struct {
	fail  int32
	err   error
	calls atomic.Int32
}

func (b *blip) Retrieve(context.Context) (aws.Credentials, error) {
	n := b.calls.Add(1)
	if b.fail < 0 || n <= b.fail {
		return aws.Credentials{}, b.err
	}
	return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
}

// dropped is a credentials provider's call whose connection dropped: a
// failure the AWS SDK's standard retryer calls retryable.
var dropped = &smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole", Err: &smithyhttp.RequestSendError{Err: io.EOF}}

// TestACredentialsBlipIsRetriedWithANotice: under --retry-for, credentials
// that fail once for a reason the AWS SDK retries (a dropped connection
// to STS) are asked for again as a send's own failure is retried — with
// the notice every retry sends, saying the credentials could not be had —
// and the request goes once they come. On main authorize asked again
// silently, after the AWS retryer's backoff, blind to --retry-for.
func TestACredentialsBlipIsRetriedWithANotice(t *testing.T) {
	hermetic(t)
	t.Cleanup(send.NoWaitsForTests()) // the backoff's real time is not what is tested
	for _, noStream := range []bool{false, true} {
		creds := &blip{fail: 1, err: dropped}
		srv := providertest.NewBedrock(t, providertest.Step{Text: "ok"})
		_, client := providertest.Tap(t, srv)
		// whole answers are not retried by the wire under --retry-for:
		// the agent resends them; count-bounded retries carry them here
		retryFor := time.Minute
		if noStream {
			retryFor = 0
		}
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, RetryFor: retryFor}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var told []provider.RetryNotice
		ctx := provider.WithRetryNotice(context.Background(), func(n provider.RetryNotice) {
			mu.Lock()
			told = append(told, n)
			mu.Unlock()
		})
		if _, err := p.Complete(ctx, providertest.SampleRequest(), nil); err != nil {
			t.Fatalf("NoStream %v: Complete: %v", noStream, err)
		}
		if len(told) != 1 {
			t.Fatalf("NoStream %v: %d retry notices, want 1", noStream, len(told))
		}
		if cause := told[0].Cause(); !strings.HasPrefix(cause, "could not get the credentials: ") {
			t.Errorf("NoStream %v: the notice's cause %q does not say the credentials could not be had", noStream, cause)
		}
		if n := creds.calls.Load(); n != 2 {
			t.Errorf("NoStream %v: credentials asked for %d times, want 2", noStream, n)
		}
	}
}

// TestCredentialsBlipsEndAtTheRetryDeadline: credentials that keep
// failing for a reason the AWS SDK retries are asked for no longer than
// the deadline --retry-for set (here already come: once), and the request
// ends with an error the agent would send it again for while time is
// left (provider.Transient) — saying the credentials could not be had,
// the cause reached by errors.Is, nothing sent to Bedrock — streamed or
// whole. On main they were asked three times whatever the deadline, and
// the error was final.
func TestCredentialsBlipsEndAtTheRetryDeadline(t *testing.T) {
	hermetic(t)
	for _, noStream := range []bool{false, true} {
		creds := &blip{fail: -1, err: dropped}
		srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
		s, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, RetryFor: time.Minute}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := provider.WithRetryDeadline(context.Background(), time.Now())
		_, err = p.Complete(ctx, providertest.SampleRequest(), nil)
		if err == nil || !errors.Is(err, dropped) {
			t.Fatalf("NoStream %v: Complete: %v, want the credentials' error", noStream, err)
		}
		if !provider.Transient(err) || !provider.NeverReached(err) {
			t.Errorf("NoStream %v: Transient %v, NeverReached %v, want both: %v", noStream, provider.Transient(err), provider.NeverReached(err), err)
		}
		if !strings.Contains(err.Error(), "could not get the credentials") {
			t.Errorf("NoStream %v: the error does not say the credentials could not be had: %v", noStream, err)
		}
		if n := creds.calls.Load(); n != 1 {
			t.Errorf("NoStream %v: credentials asked for %d times past the deadline, want 1", noStream, n)
		}
		if n := s.Count(); n != 0 {
			t.Errorf("NoStream %v: %d requests reached Bedrock", noStream, n)
		}
	}
}

// TestAnInstanceMetadataServiceThatCannotBeConnectedToMeansNoCredentials:
// the default chain's last resort, the EC2 instance's role, on a machine
// whose instance metadata service cannot be connected to (a laptop) means
// no credentials are configured: authorize makes it final at once, not
// retried for --retry-for (a user without credentials waited two minutes
// of retries to read why), whatever the AWS SDK's retryer calls a refused
// connection. The errors are made as the IMDS client makes them (an
// *smithy.OperationError of its ServiceID around net/http's failure to
// dial), not by waiting its own three attempts. A 5xx of the service, or
// another service's refused connection, stays the attempt's to retry.
func TestAnInstanceMetadataServiceThatCannotBeConnectedToMeansNoCredentials(t *testing.T) {
	dial := &url.Error{Op: "Put", URL: "http://169.254.169.254/latest/api/token", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	answered := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("busy")}
	for _, c := range []struct {
		name  string
		err   error
		final bool
	}{
		{"IMDS refused", &smithy.OperationError{ServiceID: imds.ServiceID, OperationName: "GetToken", Err: &smithyhttp.RequestSendError{Err: dial}}, true},
		{"IMDS refused, wrapped by the role's provider", fmt.Errorf("failed to refresh cached credentials, %w", &smithy.OperationError{ServiceID: imds.ServiceID, OperationName: "GetMetadata", Err: &smithyhttp.RequestSendError{Err: dial}}), true},
		{"IMDS 503", &smithy.OperationError{ServiceID: imds.ServiceID, OperationName: "GetMetadata", Err: answered}, false},
		{"STS refused", &smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole", Err: &smithyhttp.RequestSendError{Err: dial}}, false},
	} {
		if got := noInstanceRole(c.err); got != c.final {
			t.Errorf("%s: noInstanceRole = %v, want %v", c.name, got, c.final)
		}
		err := authorize(context.Background(), func() error { return c.err })
		if provider.IsFinal(err) != c.final || !provider.NeverReached(err) || !errors.Is(err, c.err) {
			t.Errorf("%s: authorize's error final %v (want %v), never reached %v: %v", c.name, provider.IsFinal(err), c.final, provider.NeverReached(err), err)
		}
	}
}

// TestARequestThatCannotBeRoutedIsNotRetried: a model that cannot be one
// segment of the invoke path (a dot segment) fails every attempt alike:
// the request ends at the first, told as no retry and not transient —
// streamed (whose retries --retry-for bounds by time only) or whole. On
// main the wire's sender retried it as a connection's failure.
func TestARequestThatCannotBeRoutedIsNotRetried(t *testing.T) {
	hermetic(t)
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
		_, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, NoStream: noStream, MaxRetries: 2}, AWS: &aws.Config{Region: "us-east-1", Credentials: &blip{}}})
		if err != nil {
			t.Fatal(err)
		}
		var told atomic.Int32
		ctx := provider.WithRetryNotice(context.Background(), func(provider.RetryNotice) { told.Add(1) })
		req := providertest.SampleRequest()
		req.Model = ".."
		_, err = p.Complete(ctx, req, nil)
		if err == nil || provider.Transient(err) || told.Load() != 0 {
			t.Errorf("NoStream %v: error %v (%d retries told): none, or one retried", noStream, err, told.Load())
		}
	}
}
