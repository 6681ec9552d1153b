package bedrock

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// failing fails every Retrieve with err.
type failing struct{ err error }

// countingProvider counts Retrieve calls of p.
type countingProvider struct {
	p     aws.CredentialsProvider
	calls atomic.Int32
}

func (c *countingProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c.calls.Add(1)
	return c.p.Retrieve(ctx)
}

func (f failing) Retrieve(context.Context) (aws.Credentials, error) { return aws.Credentials{}, f.err }

// TestCredentialsAreAskedForAsTheSDKsClientAsksForThemWithinTheWiresRetryCount:
// for each credentials error, the SDK's generated client (sts here;
// bedrockruntime is generated the same way: its retry step comes before
// it gets the identity) and myelin's bedrock ask for the credentials as
// often — again for a retryable failure, up to the standard retryer's
// three attempts, once for another (a review found every failure asked
// for once) — when the wire's retries are bounded by count, MaxRetries 2,
// which are the same three attempts. They diverge by design under
// --retry-for (the CLI's default; run.go sets no MaxRetries for the
// platforms): myelin asks again as long as the deadline allows, with its
// own backoff, as it retries a send (TestCredentialsBlipsEndAtTheRetryDeadline).
// A retryable failure is transient, as a send's own failure is: the
// agent sends the request again for it under --retry-for; another is
// not.
func TestCredentialsAreAskedForAsTheSDKsClientAsksForThemWithinTheWiresRetryCount(t *testing.T) {
	hermetic(t)
	t.Cleanup(send.NoWaitsForTests()) // the wire's backoff's real time is not what is compared
	ecs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"InternalError","message":"busy"}`, http.StatusServiceUnavailable)
	}))
	defer ecs.Close()
	for _, c := range []struct {
		name string
		p    aws.CredentialsProvider
	}{
		{"plain error (no credentials)", failing{errors.New("no credentials")}},
		{"STS throttled past its attempts", failing{&smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole", Err: &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}}}},
		{"SSO 503 past its attempts", failing{&smithy.OperationError{ServiceID: "SSO", OperationName: "GetRoleCredentials", Err: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("busy")}}}},
		{"connection dropped", failing{&smithy.OperationError{ServiceID: "STS", OperationName: "AssumeRole", Err: &smithyhttp.RequestSendError{Err: io.EOF}}}},
		{"ECS container endpoint 503", endpointcreds.New(ecs.URL, func(o *endpointcreds.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		})},
	} {
		sdkCreds := &countingProvider{p: c.p}
		sdkSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		cl := sts.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: aws.NewCredentialsCache(sdkCreds)}, func(o *sts.Options) {
			o.BaseEndpoint = aws.String(sdkSrv.URL)
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		})
		_, sdkErr := cl.GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
		sdkSrv.Close()

		myCreds := &countingProvider{p: c.p}
		srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
		_, client := providertest.Tap(t, srv)
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2}, AWS: &aws.Config{Region: "us-east-1", Credentials: aws.NewCredentialsCache(myCreds)}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
		retryable := retry.NewStandard().IsErrorRetryable(sdkErr)
		if err == nil || provider.Transient(err) != retryable {
			t.Errorf("%s: error %v: none, or transient %v where the SDK's retryer says retryable %v", c.name, err, provider.Transient(err), retryable)
		}
		t.Logf("%s: SDK %d, myelin %d retrievals (SDK: %v)", c.name, sdkCreds.calls.Load(), myCreds.calls.Load(), sdkErr)
		if sdkCreds.calls.Load() != myCreds.calls.Load() {
			t.Errorf("%s: the SDK's client asked the credentials %d times, myelin %d", c.name, sdkCreds.calls.Load(), myCreds.calls.Load())
		}
	}
}
