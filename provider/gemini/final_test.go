package gemini

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/providertest"
)

// refusingTransport fails every request with a Final error, as a
// caller's authorizing transport does for a token that cannot be had.
type refusingTransport struct{ calls atomic.Int32 }

var errRefused = errors.New("the token was refused")

func (t *refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return nil, provider.Final(errRefused)
}

// TestAFinalErrorOfTheTransportEndsTheRequestAtOnce: the sender does not
// send again for an error marked Final, nor makes a connection's error of
// it, which the agent would send the request again for.
func TestAFinalErrorOfTheTransportEndsTheRequestAtOnce(t *testing.T) {
	tr := &refusingTransport{}
	p, err := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1", MaxRetries: 2, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if !errors.Is(err, errRefused) {
		t.Fatalf("Complete: %v, want the transport's error", err)
	}
	if provider.Transient(err) {
		t.Errorf("transient: the agent would send it again: %v", err)
	}
	if n := tr.calls.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}
