package googlecloud

import (
	"context"
	"testing"

	"golang.org/x/oauth2/google"

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
