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

// TestAWorkloadIdentityTokenRefusedEndsTheRequestAtOnce: workload
// identity federation (external_account credentials: GitHub Actions,
// AWS or Azure to Google Cloud) whose STS token exchange is refused
// (400 invalid_grant, an expired or rejected subject token). x/oauth2's
// stsexchange reports it as a plain error ("oauth2/google: status code
// 400: ..."), no *oauth2.RetrieveError, so googletoken.Refused does not
// see it and the request is retried (and the agent retries it for
// --retry-for) as before the change.
func TestAWorkloadIdentityTokenRefusedEndsTheRequestAtOnce(t *testing.T) {
	var hits atomic.Int32
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"The audience in ID Token does not match the expected audience."}`)
	}))
	defer sts.Close()
	dir := t.TempDir()
	subject := filepath.Join(dir, "subject")
	if err := os.WriteFile(subject, []byte("header.payload.sig"), 0o600); err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprintf(`{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x","subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":%q,"credential_source":{"file":%q}}`, sts.URL+"/v1/token", subject)
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
	t.Logf("err: %v", err)
	if provider.Transient(err) {
		t.Errorf("transient: the agent would send the request again for a refused token: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the token endpoint was asked %d times, want 1", n)
	}
}
