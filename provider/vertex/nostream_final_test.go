package vertex

import (
	"context"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestARefusedTokenEndsAWholeRequestAtOnce: as
// TestATokenTheEndpointRefusedEndsTheRequestAtOnce, NoStream (the
// anthropic SDK's retry loop sends it).
func TestARefusedTokenEndsAWholeRequestAtOnce(t *testing.T) {
	srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
	tokens := &providertest.RefusedTokens{Status: 400}
	p, err := New(Config{Config: anthropic.Config{BaseURL: srv.URL, MaxRetries: 2, NoStream: true}, Region: "us-east5", Project: "p", Credentials: &google.Credentials{TokenSource: tokens}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = p.Complete(context.Background(), providertest.SampleRequest(), nil); err == nil {
		t.Fatal("no error")
	}
	if n := tokens.Calls(); n != 1 {
		t.Errorf("the refused token asked for %d times, want 1", n)
	}
}
