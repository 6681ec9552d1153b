package vertex

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// failingTokens fails every Token with a token endpoint's answer of
// status, counting the calls.
type failingTokens struct {
	status int
	calls  atomic.Int32
}

func (f *failingTokens) Token() (*oauth2.Token, error) {
	f.calls.Add(1)
	return nil, &oauth2.RetrieveError{Response: &http.Response{StatusCode: f.status}, ErrorCode: "invalid_grant"}
}

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
			tokens := &failingTokens{status: c.status}
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
			if n := tokens.calls.Load(); n != c.wantCalls {
				t.Errorf("own client %v, token endpoint %d: the token asked for %d times, want %d", own, c.status, n, c.wantCalls)
			}
		}
	}
}
