package bedrock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// countedCredentials fails every Retrieve with err, counting the calls.
type countedCredentials struct {
	calls atomic.Int32
	err   error
}

func (c *countedCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	c.calls.Add(1)
	return aws.Credentials{}, c.err
}

// TestCredentialsThatCannotBeHadEndTheRequestAtOnce: credentials whose
// failure the AWS SDK's retryer does not call retryable are asked for
// once, and the request is not sent again for them — streamed, or whole
// (NoStream: InvokeModel, sent by the anthropic SDK's own retry loop) —
// nor made a connection's error the agent would resend (a user without
// credentials waited two minutes of retries to read "no EC2 IMDS role
// found"); the error says the request never reached Bedrock.
func TestCredentialsThatCannotBeHadEndTheRequestAtOnce(t *testing.T) {
	hermetic(t)
	for _, noStream := range []bool{false, true} {
		srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
		s, client := providertest.Tap(t, srv)
		creds := &countedCredentials{err: errors.New("no EC2 IMDS role found")}
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2, NoStream: noStream}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil || !errors.Is(err, creds.err) {
			t.Fatalf("NoStream %v: Complete: %v, want the credentials' error", noStream, err)
		}
		if !provider.NeverReached(err) {
			t.Errorf("NoStream %v: the error does not say the request never reached Bedrock (a new conversation would be stored): %v", noStream, err)
		}
		if provider.Transient(err) {
			t.Errorf("NoStream %v: the error is transient: the agent would send the request again (%v)", noStream, err)
		}
		if n := creds.calls.Load(); n != 1 {
			t.Errorf("NoStream %v: credentials asked for %d times, want 1: the request was sent again for them", noStream, n)
		}
		if n := s.Count(); n != 0 {
			t.Errorf("NoStream %v: %d requests reached Bedrock", noStream, n)
		}
	}
}
