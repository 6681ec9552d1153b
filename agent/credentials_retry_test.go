package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/googlecloud"
	"github.com/myelin-run/myelin/provider/providertest"
)

// googleCloudWith is a rig's google-cloud provider whose tokens come from
// a loopback token endpoint answering with h, configured as `myelin run
// --retry-for 1m` configures a platform wire (run.go: platform config),
// whole answers (NoStream).
func googleCloudWith(t *testing.T, r *rig, h http.HandlerFunc) {
	tok := httptest.NewServer(h)
	t.Cleanup(tok.Close)
	r.provider = func(url string) (provider.Provider, error) {
		cc := clientcredentials.Config{ClientID: "id", ClientSecret: "secret", TokenURL: tok.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}
		creds := &google.Credentials{TokenSource: cc.TokenSource(context.Background())}
		return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, NoStream: true, RetryFor: time.Minute}, Credentials: creds})
	}
	r.agent = r.newAgent()
}

// A google-cloud whole answer under --retry-for whose token
// endpoint answers 503 once is sent again by the agent — one Retry event
// saying the credentials could not be had — and the turn ends with the
// answer; the gateway had the request once.
func TestGoogleCloudWholeAnswerWhoseTokenEndpointBlipsIsResentByTheAgent(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	var calls atomic.Int32
	googleCloudWith(t, r, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.fresh","token_type":"Bearer","expires_in":3600}`))
	})
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	r.srv.Push(providertest.Step{Text: "the whole answer"})
	tr, events, err := r.attempt("hi")
	if err != nil {
		t.Fatalf("the turn failed: %v (token asked %d times)", err, calls.Load())
	}
	retries := of(events, Retry)
	t.Logf("retries %q, waits %v, notices %q", retries, waits, of(events, Notice))
	if tr.Text != "the whole answer" || len(r.srv.Requests()) != 1 || calls.Load() != 2 {
		t.Errorf("turn %+v, %d requests to the gateway, %d token asks: want the answer, 1, 2", tr, len(r.srv.Requests()), calls.Load())
	}
	if len(retries) != 1 || !strings.Contains(retries[0], "could not get the credentials") {
		t.Errorf("retries %q: want one saying the credentials could not be had", retries)
	}
	if msgs := r.stored(); len(msgs) != 2 {
		t.Errorf("stored %d messages, want the prompt and the answer", len(msgs))
	}
}

// A token endpoint's refusal (401 invalid_client) is not resent: the turn ends at
// once, no Retry event, the token asked for once.
func TestGoogleCloudWholeAnswerWhoseTokenIsRefusedIsNotResent(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	var calls atomic.Int32
	googleCloudWith(t, r, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
	})
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	_, events, err := r.attempt("hi")
	t.Logf("err %v", err)
	if err == nil || len(of(events, Retry)) != 0 || calls.Load() != 1 || provider.Transient(err) {
		t.Errorf("err %v, %d retries, %d token asks: want a final error, 0, 1", err, len(of(events, Retry)), calls.Load())
	}
}

// A token endpoint that answers 200 with something that is no token (a
// captive portal, a proxy's page, a token_url misconfigured to a web
// server) can never give a token: the turn ends at once, the token asked
// for once, not resent for all of --retry-for.
func TestGoogleCloudTokenEndpointThatAnswersNoTokenEndsTheTurnAtOnce(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	var calls atomic.Int32
	googleCloudWith(t, r, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hello":"world"}`))
	})
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	_, events, err := r.attempt("hi")
	t.Logf("err %v; waits %v", err, waits)
	if len(of(events, Retry)) != 0 || calls.Load() != 1 {
		t.Errorf("%d Retry events, %d token asks, waited %v: a token endpoint that answers no token was resent for --retry-for", len(of(events, Retry)), calls.Load(), totalWait(waits))
	}
	if err == nil || !provider.IsFinal(err) || provider.Transient(err) {
		t.Errorf("err %v: want a final error, not transient", err)
	}
}

// A turn cancelled while the token endpoint blips ends with an error
// that errors.Is context.Canceled, not a credentials failure.
func TestGoogleCloudTurnCancelledDuringATokenBlipEndsCanceled(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	ctx, cancel := context.WithCancel(context.Background())
	googleCloudWith(t, r, func(w http.ResponseWriter, _ *http.Request) {
		cancel()
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	_, err := r.agent.Turn(ctx, r.id, "hi", func(Event) {})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v: want context.Canceled", err)
	}
}

// totalWait is the sum of ds.
func totalWait(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// On GKE with Workload Identity misconfigured, the metadata server
// answers the token request 403: a google-cloud whole answer under
// --retry-for ends at once, the token asked for once, not resent.
func TestGoogleCloudMetadataServers403IsNotResent(t *testing.T) {
	var calls atomic.Int32
	md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "Unable to generate access token; IAM returned 403 Forbidden: Permission 'iam.serviceAccounts.getAccessToken' denied", http.StatusForbidden)
	}))
	t.Cleanup(md.Close)
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	r := newWireRig(t, "google-cloud")
	r.provider = func(url string) (provider.Provider, error) {
		creds := &google.Credentials{TokenSource: google.ComputeTokenSource("")}
		return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, NoStream: true, RetryFor: time.Minute}, Credentials: creds})
	}
	r.agent = r.newAgent()
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	_, events, err := r.attempt("hi")
	t.Logf("err %v; waits %v", err, waits)
	if len(of(events, Retry)) != 0 || calls.Load() != 1 {
		t.Errorf("%d Retry events, %d token asks, waited %v: a 403 was resent for --retry-for", len(of(events, Retry)), calls.Load(), totalWait(waits))
	}
	if err == nil || !provider.IsFinal(err) || provider.Transient(err) {
		t.Errorf("err %v: want a final error, not transient", err)
	}
}

// A token endpoint that takes the connection and never answers does not
// hold a turn the user cancelled: the turn ends with context.Canceled
// once cancelled while the token is asked for (x/oauth2's token sources
// take no context; before, the turn waited for the endpoint). The
// endpoint is released only when the test ends, so a turn that ends at
// all ended by its cancel; the bound below only keeps a failing test
// from hanging.
func TestGoogleCloudTurnCancelledWhileTheTokenEndpointHangsEnds(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	googleCloudWith(t, r, func(w http.ResponseWriter, req *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	defer close(release)
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := r.agent.Turn(ctx, r.id, "hi", func(Event) {}); done <- err }()
	<-asked
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the turn ended with %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end a minute after it was cancelled: the token's ask ignores the turn's context")
	}
}
