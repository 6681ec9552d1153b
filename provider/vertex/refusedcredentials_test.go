package vertex

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2/google"

	"github.com/myelin-run/myelin/provider"
	"github.com/myelin-run/myelin/provider/anthropic"
	"github.com/myelin-run/myelin/provider/providertest"
)

// TestRefusedGoogleCredentialsEndTheRequestAtOnce: credentials whose
// token x/oauth2 reports refused only in its text (no
// *oauth2.RetrieveError) end the request at once too (reviews found both
// retried, and the agent resending for --retry-for):
//   - workload identity federation (external_account: GitHub Actions, AWS
//     or Azure to Google Cloud) whose STS token exchange is refused
//     ("oauth2/google: status code 400: ...");
//   - an impersonated service account (what `gcloud auth
//     application-default login --impersonate-service-account` writes)
//     whose source user credentials are refused (a revoked refresh token,
//     invalid_rapt), flattened with %v into "unable to generate access
//     token: ...: oauth2: \"invalid_grant\" ...".
func TestRefusedGoogleCredentialsEndTheRequestAtOnce(t *testing.T) {
	var hits atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"refused"}`)
	}))
	defer tokens.Close()
	subject := filepath.Join(t.TempDir(), "subject")
	if err := os.WriteFile(subject, []byte("header.payload.sig"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, json string }{
		{"workload identity federation", fmt.Sprintf(`{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x","subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":%q,"credential_source":{"file":%q}}`,
			tokens.URL+"/v1/token", subject)},
		{"an impersonated service account", fmt.Sprintf(`{"type":"impersonated_service_account","service_account_impersonation_url":%q,"source_credentials":{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","token_uri":%q}}`,
			tokens.URL+"/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken", tokens.URL+"/token")},
	} {
		hits.Store(0)
		creds, err := google.CredentialsFromJSON(context.Background(), []byte(c.json), "https://www.googleapis.com/auth/cloud-platform")
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
			t.Errorf("%s: error %v: none, or transient: the agent would send the request again for a refused token", c.name, err)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("%s: the token endpoint was asked %d times, want 1", c.name, n)
		}
	}
}
