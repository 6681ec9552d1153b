package googlecloud

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestATokenEndpointsTransientFailureIsResentAsASendsOwn: a token endpoint
// that answers 503, or cannot be reached, fails the request with an error
// the agent sends the request again for (provider.Transient) — streamed
// or whole, with or without --retry-for — that says the credentials could
// not be had and why (the cause reached by errors.As), that nothing
// reached the gateway; a refusal (400, 401, 403) is never transient and
// is asked for once. On main a whole answer under --retry-for (which its
// wire does not retry: the agent does) ended the turn at once.
func TestATokenEndpointsTransientFailureIsResentAsASendsOwn(t *testing.T) {
	hermetic(t)
	for _, c := range []struct {
		name      string
		closed    bool
		status    int
		transient bool
	}{
		{"503", false, 503, true},
		{"unreachable", true, 0, true},
		{"400", false, 400, false},
		{"401", false, 401, false},
		{"403", false, 403, false},
	} {
		for _, noStream := range []bool{false, true} {
			for _, retryFor := range []time.Duration{0, time.Minute} {
				name := c.name
				if noStream {
					name += " whole"
				}
				if retryFor > 0 {
					name += " --retry-for"
				}
				var fail []int
				if c.status != 0 {
					fail = []int{c.status, c.status, c.status}
				}
				tokens := providertest.NewTokenEndpoint(t, fail...)
				if c.closed {
					tokens = providertest.NewClosedTokenEndpoint(t)
				}
				srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "never"})
				s, client := providertest.Tap(t, srv)
				p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: -1, NoStream: noStream, RetryFor: retryFor},
					Project: "p", WorkspaceID: "wrkspc_test", Credentials: tokens.Credentials()})
				if err != nil {
					t.Fatal(err)
				}
				// the deadline already here: the wire's own retries, if
				// any, end at once
				ctx := provider.WithRetryDeadline(context.Background(), time.Now())
				_, err = p.Complete(ctx, providertest.SampleRequest(), nil)
				if err == nil {
					t.Fatalf("%s: no error", name)
				}
				if got := provider.Transient(err); got != c.transient {
					t.Errorf("%s: Transient %v, want %v: %v", name, got, c.transient, err)
				}
				if !provider.NeverReached(err) {
					t.Errorf("%s: the error does not say the request never reached the gateway: %v", name, err)
				}
				if n := s.Count(); n != 0 {
					t.Errorf("%s: %d requests reached the gateway", name, n)
				}
				if c.transient {
					t.Logf("%s: %v", name, err)
					if !strings.Contains(err.Error(), "could not get the credentials") {
						t.Errorf("%s: the error does not say the credentials could not be had: %v", name, err)
					}
					var re *oauth2.RetrieveError
					var oe *net.OpError
					if c.closed && !errors.As(err, &oe) || !c.closed && !errors.As(err, &re) {
						t.Errorf("%s: the cause is not reached by errors.As: %v", name, err)
					}
				} else if n := tokens.Calls(); n != 1 {
					t.Errorf("%s: a refused token asked for %d times, want 1", name, n)
				}
			}
		}
	}
}

// TestAStreamedAnswerRetriesATokenEndpointsBlipWithANotice: under
// --retry-for a streamed answer's wire retries a token endpoint's 503
// itself, telling it (provider.RetryNotice) in the token's words, and
// sends once a token comes.
func TestAStreamedAnswerRetriesATokenEndpointsBlipWithANotice(t *testing.T) {
	hermetic(t)
	tokens := providertest.NewTokenEndpoint(t, 503)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "ok"})
	_, client := providertest.Tap(t, srv)
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, RetryFor: time.Minute},
		Project: "p", WorkspaceID: "wrkspc_test", Credentials: tokens.Credentials()})
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
		t.Fatalf("Complete: %v", err)
	}
	if len(told) != 1 {
		t.Fatalf("%d retry notices, want 1", len(told))
	}
	if cause := told[0].Cause(); !strings.Contains(cause, "503") {
		t.Errorf("the notice's cause %q does not say the token endpoint's 503", cause)
	}
}

// TestABadKeyFileIsNeverRetried: a service account's key file whose
// private key cannot be read fails every token alike: the request ends
// at once, not transient — streamed or whole, with or without
// --retry-for — and says why. (With the token endpoint's transient
// failures made the agent's to resend, it would have been resent for all
// of --retry-for.)
func TestABadKeyFileIsNeverRetried(t *testing.T) {
	hermetic(t)
	tokens := providertest.NewTokenEndpoint(t)
	key := `{"type":"service_account","project_id":"p","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n","client_email":"sa@p.iam.gserviceaccount.com","client_id":"1","token_uri":"` + tokens.URL + `"}`
	for _, noStream := range []bool{false, true} {
		for _, retryFor := range []time.Duration{0, time.Minute} {
			creds, err := google.CredentialsFromJSON(context.Background(), []byte(key), scope)
			if err != nil {
				t.Fatal(err)
			}
			srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "never"})
			_, client := providertest.Tap(t, srv)
			p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2, NoStream: noStream, RetryFor: retryFor},
				Project: "p", WorkspaceID: "wrkspc_test", Credentials: creds})
			if err != nil {
				t.Fatal(err)
			}
			var told atomic.Int32
			ctx := provider.WithRetryNotice(context.Background(), func(provider.RetryNotice) { told.Add(1) })
			_, err = p.Complete(ctx, providertest.SampleRequest(), nil)
			if err == nil || provider.Transient(err) || told.Load() != 0 || !strings.Contains(err.Error(), "private key") {
				t.Errorf("NoStream %v, --retry-for %v: error %v (%d retries told): none, one retried, or one that does not say the key is bad", noStream, retryFor, err, told.Load())
			}
		}
	}
	if n := tokens.Calls(); n != 0 {
		t.Errorf("the token endpoint was asked %d times with a key that cannot sign", n)
	}
}
