package vertex

import (
	"context"
	"net/http"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestATokenTheEndpointRefusedEndsTheRequestAtOnce: a revoked grant
// (400 invalid_grant) is not asked for again by retrying the request;
// a token endpoint that answers 503 still is. Both clients the wire may
// send with: its own (googleClient) and a caller's.
func TestATokenTheEndpointRefusedEndsTheRequestAtOnce(t *testing.T) {
	srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
	for _, own := range []bool{true, false} {
		for _, c := range []struct {
			status    int
			wantCalls int32
		}{{400, 1}, {503, 2}} {
			tokens := &providertest.RefusedTokens{Status: c.status}
			cfg := anthropic.Config{BaseURL: srv.URL, MaxRetries: 1}
			if !own {
				cfg.HTTPClient = &http.Client{}
			}
			p, err := New(Config{Config: cfg, Region: "us-east5", Project: "p", Credentials: &google.Credentials{TokenSource: tokens}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
			if err == nil {
				t.Fatalf("own client %v, token endpoint %d: no error", own, c.status)
			}
			if c.status == 400 && provider.Transient(err) {
				t.Errorf("token endpoint %d: transient %v: the agent would send it again: %v", c.status, provider.Transient(err), err)
			}
			if n := tokens.Calls(); n != c.wantCalls {
				t.Errorf("own client %v, token endpoint %d: the token asked for %d times, want %d", own, c.status, n, c.wantCalls)
			}
		}
	}
}
