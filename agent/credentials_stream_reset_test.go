package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// The Google token endpoint speaks HTTP/2 (oauth2.googleapis.com does,
// and net/http's default client with it): a front end resetting the
// token request's stream once (RST_STREAM INTERNAL_ERROR) is a blip, as
// a 503 once is: the agent sends the whole answer again and the turn
// ends with it (on a3b5104 the turn ended at once, the reset final).
func TestGoogleCloudTokenStreamResetOnceIsResentByTheAgent(t *testing.T) {
	r := newWireRig(t, "google-cloud")
	var calls atomic.Int32
	tok := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.fresh","token_type":"Bearer","expires_in":3600}`))
	}))
	tok.EnableHTTP2 = true
	tok.StartTLS()
	t.Cleanup(tok.Close)
	r.provider = func(url string) (provider.Provider, error) {
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tok.Client())
		cc := clientcredentials.Config{ClientID: "id", ClientSecret: "secret", TokenURL: tok.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}
		creds := &google.Credentials{TokenSource: cc.TokenSource(ctx)}
		return googlecloud.New(googlecloud.Config{Config: anthropic.Config{BaseURL: url, NoStream: true, RetryFor: time.Minute}, Credentials: creds})
	}
	r.agent = r.newAgent()
	var waits []time.Duration
	r.resending(time.Minute, &waits)
	r.srv.Push(providertest.Step{Text: "the whole answer"})
	tr, _, err := r.attempt("hi")
	if err != nil {
		t.Fatalf("the turn failed: %v (token asked %d times)", err, calls.Load())
	}
	if tr.Text != "the whole answer" {
		t.Errorf("turn %+v", tr)
	}
}
