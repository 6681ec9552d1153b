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

// TestCredentialsThatCannotBeHadEndTheRequestAtOnce: the credential
// providers retry what they send (STS, SSO, the instance's metadata
// service) as the AWS SDK does; a failure that reaches the request is
// theirs after those retries, so the request is not sent again for it
// (a user without credentials waited two minutes of retries to read
// "no EC2 IMDS role found").
func TestCredentialsThatCannotBeHadEndTheRequestAtOnce(t *testing.T) {
	hermetic(t)
	srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
	s, client := providertest.Tap(t, srv)
	creds := &countedCredentials{err: errors.New("no EC2 IMDS role found")}
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || !errors.Is(err, creds.err) {
		t.Fatalf("Complete: %v, want the credentials' error", err)
	}
	if !provider.NeverReached(err) {
		t.Errorf("the error does not say the request never reached Bedrock (a new conversation would be stored): %v", err)
	}
	if provider.Transient(err) {
		t.Errorf("the error is transient: the agent would send the request again (%v)", err)
	}
	if n := creds.calls.Load(); n != 1 {
		t.Errorf("credentials asked for %d times, want 1: the request was sent again for them", n)
	}
	if n := s.Count(); n != 0 {
		t.Errorf("%d requests reached Bedrock", n)
	}
}
