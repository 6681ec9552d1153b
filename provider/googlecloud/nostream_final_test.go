package googlecloud

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
	hermetic(t)
	srv := providertest.NewGoogleCloud(t, providertest.Step{Text: "never"})
	_, client := providertest.Tap(t, srv)
	tokens := &providertest.RefusedTokens{Status: 400}
	p, err := New(Config{Config: anthropic.Config{HTTPClient: client, MaxRetries: 2, NoStream: true}, Project: "p", WorkspaceID: "wrkspc_test", Credentials: &google.Credentials{TokenSource: tokens}})
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
