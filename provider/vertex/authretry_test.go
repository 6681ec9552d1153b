package vertex

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/myelin-run/myelin/internal/googletoken"
	"github.com/myelin-run/myelin/internal/send"
	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestATokenEndpointsTransientFailureIsResentAsASendsOwn: as on the
// google-cloud gateway, a token endpoint that answers 503 or cannot be
// reached fails the request with a transient error that says the
// credentials could not be had and why and that nothing reached Vertex —
// streamed or whole, with or without --retry-for, through the wire's own
// client or a caller's; a refusal (400, 401, 403) is never transient and
// is asked for once.
func TestATokenEndpointsTransientFailureIsResentAsASendsOwn(t *testing.T) {
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
				for _, own := range []bool{true, false} {
					name := c.name
					if noStream {
						name += " whole"
					}
					if retryFor > 0 {
						name += " --retry-for"
					}
					if !own {
						name += " (a caller's client)"
					}
					var fail []int
					if c.status != 0 {
						fail = []int{c.status, c.status, c.status}
					}
					tokens := providertest.NewTokenEndpoint(t, fail...)
					if c.closed {
						tokens = providertest.NewClosedTokenEndpoint(t)
					}
					srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
					cfg := anthropic.Config{BaseURL: srv.URL, MaxRetries: -1, NoStream: noStream, RetryFor: retryFor}
					if !own {
						cfg.HTTPClient = &http.Client{}
					}
					p, err := New(Config{Config: cfg, Region: "us-east5", Project: "p", Credentials: tokens.Credentials()})
					if err != nil {
						t.Fatal(err)
					}
					// the deadline already here: the wire's own retries,
					// if any, end at once
					ctx := provider.WithRetryDeadline(context.Background(), time.Now())
					_, err = p.Complete(ctx, providertest.SampleRequest(), nil)
					if err == nil {
						t.Fatalf("%s: no error", name)
					}
					if got := provider.Transient(err); got != c.transient {
						t.Errorf("%s: Transient %v, want %v: %v", name, got, c.transient, err)
					}
					if !provider.NeverReached(err) {
						t.Errorf("%s: the error does not say the request never reached Vertex: %v", name, err)
					}
					if n := len(srv.Requests()); n != 0 {
						t.Errorf("%s: %d requests reached Vertex", name, n)
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
}

// TestAStreamedAnswerRetriesATokenEndpointsBlipWithANotice: under
// --retry-for a streamed answer's wire retries a token endpoint's 503
// itself, telling it (provider.RetryNotice) in the credentials' words,
// and sends once a token comes.
func TestAStreamedAnswerRetriesATokenEndpointsBlipWithANotice(t *testing.T) {
	tokens := providertest.NewTokenEndpoint(t, 503)
	srv := providertest.NewVertex(t, providertest.Step{Text: "ok"})
	p, err := New(Config{Config: anthropic.Config{BaseURL: srv.URL, RetryFor: time.Minute}, Region: "us-east5", Project: "p", Credentials: tokens.Credentials()})
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
	if cause := told[0].Cause(); !strings.HasPrefix(cause, "could not get the credentials: ") || !strings.Contains(cause, "503") {
		t.Errorf("the notice's cause %q does not say the credentials could not be had for the token endpoint's 503", cause)
	}
}

// TestARequestThatCannotBeRoutedIsNotRetried: no model, or a project
// that cannot be one segment of rawPredict's path (a dot segment), fails
// every attempt alike: the request ends at the first, told as no retry and not
// transient, streamed or whole. On main the wire's sender retried it as
// a connection's failure.
func TestARequestThatCannotBeRoutedIsNotRetried(t *testing.T) {
	for _, c := range []struct{ model, project string }{{"", "p"}, {"claude-test", ".."}} {
		for _, noStream := range []bool{false, true} {
			srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
			p, err := New(Config{Config: anthropic.Config{BaseURL: srv.URL, NoStream: noStream, MaxRetries: 2}, Region: "us-east5", Project: c.project, Credentials: providertest.NewTokenEndpoint(t).Credentials()})
			if err != nil {
				t.Fatal(err)
			}
			var told atomic.Int32
			ctx := provider.WithRetryNotice(context.Background(), func(provider.RetryNotice) { told.Add(1) })
			req := providertest.SampleRequest()
			req.Model = c.model
			_, err = p.Complete(ctx, req, nil)
			if err == nil || provider.Transient(err) || told.Load() != 0 {
				t.Errorf("model %q, project %q, NoStream %v: error %v (%d retries told): none, or one retried", c.model, c.project, noStream, err, told.Load())
			}
		}
	}
}

// TestARequestCancelledWhileTheTokenEndpointHangsEnds: a token endpoint
// that takes the connection and never answers does not hold a request
// whose context is cancelled — streamed or whole, through the wire's own
// client or a caller's: x/oauth2's Transport asked for the token with no
// context, and the request waited for the endpoint. The endpoint is
// released only when the test ends, so a request that ends at all ended
// by its cancel; the bound only keeps a failing test from hanging.
func TestARequestCancelledWhileTheTokenEndpointHangsEnds(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	for _, noStream := range []bool{false, true} {
		for _, own := range []bool{true, false} {
			srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
			cfg := anthropic.Config{BaseURL: srv.URL, NoStream: noStream, RetryFor: time.Minute}
			if !own {
				cfg.HTTPClient = &http.Client{}
			}
			tokens := &providertest.TokenEndpoint{URL: hang.URL + "/token"}
			p, err := New(Config{Config: cfg, Region: "us-east5", Project: "p", Credentials: tokens.Credentials()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { _, err := p.Complete(ctx, providertest.SampleRequest(), nil); done <- err }()
			<-asked
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("NoStream %v, own client %v: %v, want context.Canceled", noStream, own, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("NoStream %v, own client %v: the request did not end a minute after its cancel", noStream, own)
			}
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
	srv := providertest.NewVertex(t, providertest.Step{Text: "answered"})
	p, err := New(Config{Config: anthropic.Config{BaseURL: srv.URL, MaxRetries: 2}, Region: "us-east5", Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	tokens.CheckAskedAgainAfterNeverAnswered(t, func() error {
		_, err := p.Complete(context.Background(), providertest.SampleRequest(), nil)
		return err
	})
}
