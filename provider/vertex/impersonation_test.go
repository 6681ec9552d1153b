package vertex

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestAnImpersonationWhoseSourceIsRefusedEndsTheRequestAtOnce:
// impersonated_service_account credentials (what `gcloud auth
// application-default login --impersonate-service-account` writes) whose
// source user credentials are refused (400 invalid_grant: a revoked
// refresh token, invalid_rapt). x/oauth2's impersonate flattens the
// source's refusal into its text with %v (a review found it retried).
func TestAnImpersonationWhoseSourceIsRefusedEndsTheRequestAtOnce(t *testing.T) {
	var hits atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"reauth related error (invalid_rapt)"}`)
	}))
	defer tokens.Close()
	js := fmt.Sprintf(`{"type":"impersonated_service_account","service_account_impersonation_url":%q,"source_credentials":{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","token_uri":%q}}`,
		tokens.URL+"/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken", tokens.URL+"/token")
	creds, err := google.CredentialsFromJSON(context.Background(), []byte(js), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.NewVertex(t, providertest.Step{Text: "never"})
	p, err := New(Config{Config: anthropic.Config{BaseURL: srv.URL, MaxRetries: 1}, Region: "us-east5", Project: "p", Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), providertest.SampleRequest(), nil)
	if err == nil || provider.Transient(err) {
		t.Errorf("error %v: none, or transient: the agent would send the request again for a refused token", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the token endpoint was asked %d times, want 1", n)
	}
}
