package bedrock

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestCredentialsThatCannotBeHadEndAWholeRequestAtOnce: as
// TestCredentialsThatCannotBeHadEndTheRequestAtOnce, with NoStream
// (InvokeModel, sent by the anthropic SDK's own retry loop, which retries
// any transport error: Final is not looked at there).
func TestCredentialsThatCannotBeHadEndAWholeRequestAtOnce(t *testing.T) {
	hermetic(t)
	srv := providertest.NewBedrock(t, providertest.Step{Text: "never"})
	s, client := providertest.Tap(t, srv)
	creds := &countedCredentials{err: errors.New("no EC2 IMDS role found")}
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2, NoStream: true}, AWS: &aws.Config{Region: "us-east-1", Credentials: creds}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || !errors.Is(err, creds.err) {
		t.Fatalf("Complete: %v, want the credentials' error", err)
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
