package googlecloud

import (
	"context"
	"testing"
	"time"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/internal/googletoken"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestATokenTheEndpointRefusedEndsTheRequestAtOnce: a revoked grant
// (400 invalid_grant) is not asked for again by retrying the request;
// a token endpoint that answers 503 still is.
func TestATokenTheEndpointRefusedEndsTheRequestAtOnce(t *testing.T) {
	hermetic(t)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "never"})
	for _, c := range []struct {
		status    int
		wantCalls int32
	}{{400, 1}, {503, 2}} {
		_, client := providertest.Tap(t, srv)
		tokens := &providertest.RefusedTokens{Status: c.status}
		p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 1}, Project: "p", WorkspaceID: "wrkspc_test", Credentials: &google.Credentials{TokenSource: tokens}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
		if err == nil {
			t.Fatalf("token endpoint %d: no error", c.status)
		}
		if c.status == 400 && provider.Transient(err) {
			t.Errorf("token endpoint %d: transient %v: the agent would send it again: %v", c.status, provider.Transient(err), err)
		}
		if n := tokens.Calls(); n != c.wantCalls {
			t.Errorf("token endpoint %d: the token asked for %d times, want %d", c.status, n, c.wantCalls)
		}
	}
}

// The application default credentials' token requests end after their
// own bound (googletoken.Context, built by New): a token endpoint that
// takes the first request and never answers does not hold the request for
// ever; the sender asks again and the request is answered.
func TestADefaultCredentialsTokenRequestNeverAnsweredEndsAndIsAskedAgain(t *testing.T) {
	hermetic(t)
	defer googletoken.TimeoutForTests(300 * time.Millisecond)()
	defer send.NoWaitsForTests()()
	tokens := providertest.NewTokenEndpoint(t, providertest.NeverAnswered)
	tokens.DefaultCredentials(t)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "answered"})
	_, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2}, Project: "p", WorkspaceID: "wrkspc_test"})
	if err != nil {
		t.Fatal(err)
	}
	tokens.CheckAskedAgainAfterNeverAnswered(t, func() error {
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		return err
	})
}
